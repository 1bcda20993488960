package endpointslice_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/endpointslice"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

// Nodes every spec may put pods on: two zones, equal CPU, Ready.
const (
	nodeA, zoneA = "node-a", "zone-a"
	nodeB, zoneB = "node-b", "zone-b"
)

func TestEndpointSliceController(t *testing.T) {
	testenv.RunSuite(t, "endpointslice-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(testenv.DualStack)
	Expect(env.StartManager([]string{endpointslice.ControllerName})).To(Succeed())
	ctx := context.Background()
	for name, zone := range map[string]string{nodeA: zoneA, nodeB: zoneB} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
		Expect(env.Client.Create(ctx, n)).To(Succeed())
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		n.Status.Capacity = n.Status.Allocatable
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, n)).To(Succeed())
	}
})

// service is a ClusterIP Service selecting app=app, port "http" 80 to targetPort.
func service(ns, name, app string, targetPort intstr.IntOrString) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": app},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: targetPort}},
		},
	}
}

type podOpts struct {
	node      string
	ips       []string
	ready     bool
	phase     corev1.PodPhase
	ports     []corev1.ContainerPort
	hostname  string
	subdomain string
	hold      bool      // a finalizer keeps the pod after deletion (terminating)
	since     time.Time // the Ready condition's lastTransitionTime (default now)
}

// createPod creates a pod and, playing the kubelet, writes its IPs, phase and readiness.
func createPod(ctx context.Context, ns, name, app string, o podOpts) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeName:   o.node,
			Hostname:   o.hostname,
			Subdomain:  o.subdomain,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Ports: o.ports}},
		},
	}
	if o.hold {
		p.Finalizers = []string{"test.kcm.io/hold"}
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	if len(o.ips) == 0 && o.phase == "" {
		return p
	}
	setStatus(ctx, p, o)
	return p
}

func setStatus(ctx context.Context, p *corev1.Pod, o podOpts) {
	GinkgoHelper()
	p.Status.Phase = o.phase
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodRunning
	}
	p.Status.PodIPs = nil
	for _, ip := range o.ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(o.ips) > 0 {
		p.Status.PodIP = o.ips[0]
	}
	ready := corev1.ConditionFalse
	if o.ready {
		ready = corev1.ConditionTrue
	}
	since := metav1.Now()
	if !o.since.IsZero() {
		since = metav1.NewTime(o.since)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: since}}
	Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
}

// slicesOf lists the controller's slices of a Service, sorted by name.
func slicesOf(ctx context.Context, g Gomega, ns, svc string) []discoveryv1.EndpointSlice {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
		discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: endpointslice.ManagedBy,
	})).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// endpointsByPod indexes the endpoints of slices by target pod name.
func endpointsByPod(slices []discoveryv1.EndpointSlice) map[string]discoveryv1.Endpoint {
	out := map[string]discoveryv1.Endpoint{}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			out[ep.TargetRef.Name] = ep
		}
	}
	return out
}

// conditions renders an endpoint's conditions as ready/serving/terminating.
func conditions(ep discoveryv1.Endpoint) [3]bool {
	b := func(p *bool) bool { return p != nil && *p }
	return [3]bool{b(ep.Conditions.Ready), b(ep.Conditions.Serving), b(ep.Conditions.Terminating)}
}

// expectEvent waits for an events.k8s.io Event about the object with the reason and a note
// matching.
func expectEvent(ctx context.Context, ns, regarding, eventType, reason string, note types.GomegaMatcher) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == regarding && e.Reason == reason && e.Type == eventType && e.ReportingController == "endpoint-slice-controller" {
				if ok, _ := note.Match(e.Note); ok {
					return
				}
			}
			seen = append(seen, fmt.Sprintf("%s %s %s: %s", e.Regarding.Name, e.Type, e.Reason, e.Note))
		}
		g.Expect(seen).To(ContainElement(And(ContainSubstring(regarding+" "+eventType+" "+reason))), "no matching Event")
		g.Expect(false).To(BeTrue(), "no Event with a matching note among %v", seen)
	}).Should(Succeed())
}
