package endpointslice

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEndpointState(t *testing.T) {
	now := metav1.Now()
	running := func(ready bool, change func(*corev1.Pod)) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
		if change != nil {
			change(p)
		}
		return p
	}
	svc := &corev1.Service{}
	publish := &corev1.Service{Spec: corev1.ServiceSpec{PublishNotReadyAddresses: true}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		svc  *corev1.Service
		want string
	}{
		{"gone", nil, svc, Absent},
		{"no IP yet", running(false, func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }), svc, Absent},
		{"finished", running(false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), svc, Absent},
		{"failed", running(true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), svc, Absent},
		{"not ready", running(false, nil), svc, NotReady},
		{"ready", running(true, nil), svc, Ready},
		{"ready, terminating", running(true, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), svc, NotReady},
		{"not ready, published", running(false, nil), publish, Ready},
		{"terminating, published", running(true, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), publish, Ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EndpointState(tc.pod, tc.svc); got != tc.want {
				t.Errorf("EndpointState = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEndpointsShow(t *testing.T) {
	endpoint := func(pod string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
	}
	v4 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{
		endpoint("a", ptr.To(true)), endpoint("b", ptr.To(false)), endpoint("c", nil), endpoint("d", ptr.To(false)),
	}}
	// Dual stack: d is ready in its IPv6 slice only (a moment between two writes).
	v6 := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{
		endpoint("d", ptr.To(true)),
	}}
	// A slice of another kind of target does not show pods.
	other := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.9"},
		TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "e"}}}}
	all := []*discoveryv1.EndpointSlice{v4, v6, other}
	for _, tc := range []struct {
		name          string
		want          map[string]string
		done, waiting []string
	}{
		{"nothing pending", map[string]string{}, nil, nil},
		{"ready shown", map[string]string{"a": Ready}, []string{"a"}, nil},
		{"ready unset counts as ready", map[string]string{"c": Ready}, []string{"c"}, nil},
		{"not ready shown", map[string]string{"b": NotReady}, []string{"b"}, nil},
		{"ready in one address type", map[string]string{"d": Ready}, []string{"d"}, nil},
		{"ready wanted, not ready shown", map[string]string{"b": Ready}, nil, []string{"b"}},
		{"not ready wanted, ready shown", map[string]string{"a": NotReady}, nil, []string{"a"}},
		{"absent wanted, still listed", map[string]string{"a": Absent}, nil, []string{"a"}},
		{"absent wanted, gone", map[string]string{"x": Absent, "e": Absent}, []string{"e", "x"}, nil},
		{"ready wanted, not listed yet", map[string]string{"x": Ready}, nil, []string{"x"}},
		{"several", map[string]string{"a": Ready, "b": Ready, "x": Absent}, []string{"a", "x"}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, waiting := EndpointsShow(tc.want, all)
			if !slices.Equal(done, tc.done) || !slices.Equal(waiting, tc.waiting) {
				t.Errorf("EndpointsShow = %v, %v; want %v, %v", done, waiting, tc.done, tc.waiting)
			}
		})
	}
}
