package endpointslice

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/convergence"
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

// The clocks of sliceClocks, fed events by hand: pending pods against the counted slices.
func TestSliceClocks(t *testing.T) {
	var observed []float64
	w := &sliceClocks{t: convergence.NewTracker(Convergence, clock.RealClock{}, func(s float64) { observed = append(observed, s) }),
		pending: map[string]map[string]string{}, shown: map[string]shownPods{}}
	slice := func(name string, eps map[string]bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{discoveryv1.LabelManagedBy: ManagedBy, discoveryv1.LabelServiceName: "web"}}}
		for pod, ready := range eps {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}})
		}
		return s
	}
	running := func() bool { return !w.t.State("ns/web").Since.IsZero() }

	empty := slice("web-1", nil)
	w.sliceChanged(nil, empty)
	w.want("ns/web", map[string]string{"a": Ready})
	if !running() {
		t.Fatal("a pod to show ready, not in the slices: the clock runs")
	}
	// Another Service's slice, and an unmanaged one, change nothing.
	other := slice("other-1", map[string]bool{"a": true})
	other.Labels[discoveryv1.LabelServiceName] = "other"
	w.sliceChanged(nil, other)
	unmanaged := slice("mirror-1", map[string]bool{"a": true})
	unmanaged.Labels[discoveryv1.LabelManagedBy] = "someone-else"
	w.sliceChanged(nil, unmanaged)
	notReady := slice("web-1", map[string]bool{"a": false})
	w.sliceChanged(empty, notReady)
	if !running() || len(observed) != 0 {
		t.Fatalf("shown not ready: still running (observed %v)", observed)
	}
	ready := slice("web-1", map[string]bool{"a": true})
	w.sliceChanged(notReady, ready)
	if running() || len(observed) != 1 {
		t.Fatalf("shown ready: the clock stops, one observation (observed %v)", observed)
	}

	// The controller wrote the slice before this handler saw the pod's event: no clock.
	w.want("ns/web", map[string]string{"a": Ready})
	if running() || len(observed) != 1 {
		t.Fatalf("already shown: no clock (observed %v)", observed)
	}

	// Deleted: absent wanted; the endpoint moving to another slice of the Service is still there.
	w.want("ns/web", map[string]string{"a": Absent})
	moved := slice("web-2", map[string]bool{"a": true})
	w.sliceChanged(nil, moved)
	w.sliceChanged(ready, slice("web-1", nil))
	if !running() {
		t.Fatal("still listed in web-2: the clock runs")
	}
	w.sliceChanged(moved, nil)
	if running() || len(observed) != 2 {
		t.Fatalf("listed nowhere: the clock stops (observed %v)", observed)
	}

	// A deleted Service forgets its clock.
	w.want("ns/web", map[string]string{"b": Ready})
	w.forget("ns/web")
	if running() || len(w.pending) != 0 {
		t.Fatal("a deleted Service keeps its clock")
	}
}
