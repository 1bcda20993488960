package endpointslice

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/pod"
)

func testPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      "10.0.0.1",
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
func ips(v ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.PodIPs = nil
		p.Status.PodIP = ""
		for _, ip := range v {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		if len(v) > 0 {
			p.Status.PodIP = v[0]
		}
	}
}

func testService(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestIncludePod(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"running with IP":       {testPod("p"), true},
		"not ready":             {testPod("p", notReady), true},
		"terminating":           {testPod("p", deleting), true},
		"no IP":                 {testPod("p", ips()), false},
		"podIP only":            {testPod("p", func(p *corev1.Pod) { p.Status.PodIPs = nil }), true},
		"succeeded":             {testPod("p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		"failed":                {testPod("p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		"pending with IP":       {testPod("p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), true},
		"failed and terminated": {testPod("p", deleting, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
	}
	for name, tt := range tests {
		if got := pod.InEndpoints(tt.pod, true); got != tt.want {
			t.Errorf("%s: InEndpoints = %v, want %v", name, got, tt.want)
		}
	}
}

func TestPodToEndpointConditions(t *testing.T) {
	publish := func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }
	tests := map[string]struct {
		pod  *corev1.Pod
		svc  *corev1.Service
		want [3]bool // ready, serving, terminating
	}{
		"ready":                           {testPod("p"), testService(), [3]bool{true, true, false}},
		"not ready":                       {testPod("p", notReady), testService(), [3]bool{false, false, false}},
		"ready, terminating":              {testPod("p", deleting), testService(), [3]bool{false, true, true}},
		"not ready, terminating":          {testPod("p", notReady, deleting), testService(), [3]bool{false, false, true}},
		"not ready, publish":              {testPod("p", notReady), testService(publish), [3]bool{true, false, false}},
		"not ready, terminating, publish": {testPod("p", notReady, deleting), testService(publish), [3]bool{true, false, true}},
	}
	for name, tt := range tests {
		ep := podToEndpoint(tt.pod, nil, tt.svc, discoveryv1.AddressTypeIPv4)
		got := [3]bool{*ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating}
		if got != tt.want {
			t.Errorf("%s: conditions = %v, want %v", name, got, tt.want)
		}
	}
}

func TestPodToEndpointFields(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "z1"}}}
	p := testPod("p", ips("10.0.0.1", "fd00:0:0::1"), func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "h", "web" })
	v6 := podToEndpoint(p, node, testService(), discoveryv1.AddressTypeIPv6)
	if strings.Join(v6.Addresses, ",") != "fd00::1" {
		t.Errorf("IPv6 addresses = %v, want the canonical fd00::1", v6.Addresses)
	}
	if v6.Zone == nil || *v6.Zone != "z1" || v6.NodeName == nil || *v6.NodeName != "n1" {
		t.Errorf("zone/node = %v/%v", v6.Zone, v6.NodeName)
	}
	if v6.Hostname == nil || *v6.Hostname != "h" {
		t.Errorf("hostname = %v, want h (subdomain is the Service)", v6.Hostname)
	}
	if v6.TargetRef == nil || *v6.TargetRef != (corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: p.UID}) {
		t.Errorf("targetRef = %+v", v6.TargetRef)
	}
	other := podToEndpoint(p, &corev1.Node{}, testService(func(s *corev1.Service) { s.Name = "other" }), discoveryv1.AddressTypeIPv4)
	if other.Hostname != nil || other.Zone != nil {
		t.Errorf("hostname/zone = %v/%v, want none for another Service and a node without zone", other.Hostname, other.Zone)
	}
}

func TestEndpointPorts(t *testing.T) {
	headless := testService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil })
	if got := endpointPorts(headless, testPod("p")); got == nil || len(got) != 0 {
		t.Errorf("headless without ports: %v, want an empty list", got)
	}
	svc := testService(func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "named", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("missing")})
		s.Spec.Ports[0].AppProtocol = ptr.To("http")
	})
	got := endpointPorts(svc, testPod("p"))
	want := []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("http")}}
	if portsKey(got) != portsKey(want) || len(got) != 1 {
		t.Errorf("ports = %v, want only the resolvable one %v", got, want)
	}
}

func TestAddressTypes(t *testing.T) {
	tests := map[string]struct {
		svc  *corev1.Service
		want []discoveryv1.AddressType
	}{
		"IPv4": {testService(), []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}},
		"dual": {testService(func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
		}),
			[]discoveryv1.AddressType{discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeIPv4}},
		"no families, IPv6 cluster IP": {testService(func(s *corev1.Service) { s.Spec.IPFamilies = nil; s.Spec.ClusterIP = "fd00::10" }),
			[]discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}},
		"no families, headless": {testService(func(s *corev1.Service) { s.Spec.IPFamilies = nil; s.Spec.ClusterIP = corev1.ClusterIPNone }),
			[]discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}},
	}
	for name, tt := range tests {
		got := addressTypes(tt.svc)
		if strings.Join(toStrings(got), ",") != strings.Join(toStrings(tt.want), ",") {
			t.Errorf("%s: addressTypes = %v, want %v", name, got, tt.want)
		}
	}
}

func toStrings(types []discoveryv1.AddressType) []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = string(t)
	}
	return out
}

func TestSliceLabels(t *testing.T) {
	tests := map[string]struct {
		sliceLabels, svcLabels map[string]string
		headless               bool
		want                   map[string]string
		changed                bool
	}{
		"new slice": {
			svcLabels: map[string]string{"a": "1"},
			want:      map[string]string{"a": "1", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			changed:   true,
		},
		"same": {
			sliceLabels: map[string]string{"a": "1", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			svcLabels:   map[string]string{"a": "1"},
			want:        map[string]string{"a": "1", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
		},
		"reserved Service labels are not copied": {
			sliceLabels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			svcLabels:   map[string]string{discoveryv1.LabelManagedBy: "me", corev1.IsHeadlessService: "x"},
			want:        map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
		},
		"headless marker alone is no change": {
			sliceLabels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			headless:    true,
			want:        map[string]string{corev1.IsHeadlessService: "", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
		},
		"removed Service label": {
			sliceLabels: map[string]string{"old": "x", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			want:        map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			changed:     true,
		},
	}
	for name, tt := range tests {
		svc := testService(func(s *corev1.Service) {
			s.Labels = tt.svcLabels
			if tt.headless {
				s.Spec.ClusterIP = corev1.ClusterIPNone
			}
		})
		got, changed := sliceLabels(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: tt.sliceLabels}}, svc)
		if changed != tt.changed || !equalMaps(got, tt.want) {
			t.Errorf("%s: sliceLabels = %v, %v; want %v, %v", name, got, changed, tt.want, tt.changed)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSlicePrefix(t *testing.T) {
	if got := slicePrefix("web"); got != "web-" {
		t.Errorf("slicePrefix(web) = %q", got)
	}
}
