package servicelb

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/utils/ptr"
)

const ownClass = "kcm.io/pool"

func lbService(mod ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "u1"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, m := range mod {
		m(svc)
	}
	return svc
}

func TestWantsLoadBalancer(t *testing.T) {
	cases := []struct {
		name  string
		svc   *corev1.Service
		class string
		want  bool
	}{
		{"LoadBalancer without class", lbService(), "", true},
		{"LoadBalancer without class, provider with a class", lbService(), ownClass, true},
		{"ClusterIP", lbService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }), ownClass, false},
		{"NodePort", lbService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), "", false},
		{"another class", lbService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }), ownClass, false},
		{"the provider's class", lbService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To(ownClass) }), ownClass, true},
		{"a class, provider without one", lbService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To(ownClass) }), "", false},
		{"an empty class, provider without one", lbService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("") }), "", false},
	}
	for _, c := range cases {
		if got := wantsLoadBalancer(c.svc, c.class); got != c.want {
			t.Errorf("%s: wantsLoadBalancer = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNeedsCleanup(t *testing.T) {
	withFinalizer := func(s *corev1.Service) { s.Finalizers = []string{"other", servicehelper.LoadBalancerCleanupFinalizer} }
	deleting := func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{} }
	clusterIP := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }
	cases := []struct {
		name string
		svc  *corev1.Service
		want bool
	}{
		{"no finalizer", lbService(), false},
		{"no finalizer, deleting", lbService(deleting), false},
		{"no finalizer, ClusterIP", lbService(clusterIP), false},
		{"finalizer, LoadBalancer", lbService(withFinalizer), false},
		{"finalizer, deleting", lbService(withFinalizer, deleting), true},
		{"finalizer, ClusterIP", lbService(withFinalizer, clusterIP), true},
	}
	for _, c := range cases {
		if got := needsCleanup(c.svc); got != c.want {
			t.Errorf("%s: needsCleanup = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNeedsUpdate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*corev1.Service)
		want bool
	}{
		{"nothing", func(*corev1.Service) {}, false},
		{"status", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
		}, false},
		{"finalizers and labels", func(s *corev1.Service) {
			s.Finalizers = []string{servicehelper.LoadBalancerCleanupFinalizer}
			s.Labels = map[string]string{"a": "b"}
		}, false},
		{"selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "x"} }, false},
		{"type", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }, true},
		{"source ranges", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }, true},
		{"port", func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"node port", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30081 }, true},
		{"target port", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }, true},
		{"app protocol", func(s *corev1.Service) { s.Spec.Ports[0].AppProtocol = ptr.To("h2c") }, true},
		{"port added", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443})
		}, true},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, true},
		{"session affinity config", func(s *corev1.Service) {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](5)}}
		}, true},
		{"load balancer IP", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "192.0.2.7" }, true},
		{"external IPs", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.8"} }, true},
		{"annotations", func(s *corev1.Service) { s.Annotations = map[string]string{"a": "b"} }, true},
		{"UID", func(s *corev1.Service) { s.UID = "u2" }, true},
		{"external traffic policy", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }, true},
		{"health check node port", func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 }, true},
		{"IP families", func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		}, true},
	}
	for _, c := range cases {
		cur := lbService(c.mod)
		if got := needsUpdate(lbService(), cur, ""); got != c.want {
			t.Errorf("%s: needsUpdate = %v, want %v", c.name, got, c.want)
		}
	}
	// Neither version served: nothing to update, whatever changed.
	other := func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }
	if needsUpdate(lbService(other), lbService(other, func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }), ownClass) {
		t.Error("needsUpdate of a Service of another class = true, want false")
	}
}

func node(name string, mod ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, m := range mod {
		m(&n)
	}
	return n
}

func label(v string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: v} }
}

func TestStableNodes(t *testing.T) {
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoSchedule}, {Key: toBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
	}
	deleting := func(n *corev1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now }
	notReady := func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	}
	otherTaint := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	}
	nodes := []corev1.Node{
		node("z-plain"),
		node("a-excluded", label("true")),
		node("b-label-false", label("false")),
		node("c-label-garbage", label("yes please")),
		node("d-autoscaler", tainted),
		node("e-deleting", deleting),
		node("f-not-ready", notReady),
		node("g-unreachable", otherTaint),
	}
	var got []string
	for _, n := range stableNodes(nodes) {
		got = append(got, n.Name)
	}
	want := []string{"b-label-false", "f-not-ready", "g-unreachable", "z-plain"}
	if len(got) != len(want) {
		t.Fatalf("stableNodes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stableNodes = %v, want %v (sorted)", got, want)
		}
	}
}

func TestShouldSyncUpdatedNode(t *testing.T) {
	withID := func(id string) func(*corev1.Node) { return func(n *corev1.Node) { n.Spec.ProviderID = id } }
	cases := []struct {
		name     string
		old, cur corev1.Node
		want     bool
	}{
		{"nothing", node("n"), node("n"), false},
		{"excluded", node("n"), node("n", label("true")), true},
		{"included again", node("n", label("true")), node("n", label("false")), true},
		{"exclusion unchanged", node("n", label("true")), node("n", label("1")), false},
		{"provider ID", node("n"), node("n", withID("fake://n")), true},
		{"autoscaler taint (waits for the next sync)", node("n"), node("n", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: toBeDeletedTaint}}
		}), false},
		{"labels", node("n"), node("n", func(n *corev1.Node) { n.Labels = map[string]string{"a": "b"} }), false},
	}
	for _, c := range cases {
		if got := shouldSyncUpdatedNode(&c.old, &c.cur); got != c.want {
			t.Errorf("%s: shouldSyncUpdatedNode = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNodesSufficientlyEqual(t *testing.T) {
	p := func(name, id string) *corev1.Node {
		n := node(name, func(n *corev1.Node) { n.Spec.ProviderID = id })
		return &n
	}
	cases := []struct {
		name     string
		old, cur []*corev1.Node
		want     bool
	}{
		{"both empty", nil, nil, true},
		{"same", []*corev1.Node{p("a", "1"), p("b", "2")}, []*corev1.Node{p("b", "2"), p("a", "1")}, true},
		{"added", []*corev1.Node{p("a", "1")}, []*corev1.Node{p("a", "1"), p("b", "2")}, false},
		{"replaced", []*corev1.Node{p("a", "1")}, []*corev1.Node{p("b", "1")}, false},
		{"provider ID", []*corev1.Node{p("a", "1")}, []*corev1.Node{p("a", "2")}, false},
	}
	for _, c := range cases {
		if got := nodesSufficientlyEqual(c.old, c.cur); got != c.want {
			t.Errorf("%s: nodesSufficientlyEqual = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWaitingForAddress(t *testing.T) {
	cases := []struct {
		name string
		svc  *corev1.Service
		want bool
	}{
		{"no address", lbService(), true},
		{"an address", lbService(func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
		}), false},
		{"deleting", lbService(func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{} }), false},
		{"another class", lbService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }), false},
		{"ClusterIP", lbService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }), false},
	}
	for _, c := range cases {
		if got := waitingForAddress(c.svc, ownClass); got != c.want {
			t.Errorf("%s: waitingForAddress = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLoggableNodeNames(t *testing.T) {
	var nodes []*corev1.Node
	for i := 0; i < 23; i++ {
		n := node(string(rune('a' + i)))
		nodes = append(nodes, &n)
	}
	got := loggableNodeNames(nodes)
	if len(got) != 21 || got[20] != "<3 more>" || got[0] != "a" {
		t.Errorf("loggableNodeNames = %v, want the first 20 and <3 more>", got)
	}
	if got := loggableNodeNames(nodes[:2]); len(got) != 2 {
		t.Errorf("loggableNodeNames of 2 = %v", got)
	}
}
