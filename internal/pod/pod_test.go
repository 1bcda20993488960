package pod

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func newPod(uid string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	p.Status.Phase = corev1.PodRunning
	p.Spec.NodeName = "node"
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func created(ago time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
}
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{DeletionCostAnnotation: c} }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}} }
}
func readySince(ago time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
}

func TestDeleteFirst(t *testing.T) {
	tests := []struct {
		name         string
		first, then  *corev1.Pod
		rankA, rankB int
	}{
		{name: "unassigned before assigned", first: newPod("a", onNode("")), then: newPod("b")},
		{name: "pending before unknown", first: newPod("a", phase(corev1.PodPending)), then: newPod("b", phase(corev1.PodUnknown))},
		{name: "unknown before running", first: newPod("a", phase(corev1.PodUnknown)), then: newPod("b")},
		{name: "not ready before ready", first: newPod("a"), then: newPod("b", readySince(time.Minute))},
		{name: "lower deletion cost first", first: newPod("a", cost("-5"), readySince(time.Minute)), then: newPod("b", readySince(time.Minute))},
		{name: "malformed cost counts as 0", first: newPod("a", cost("x")), then: newPod("b", cost("1"))},
		{name: "more co-located siblings first", first: newPod("a"), then: newPod("b"), rankA: 3, rankB: 1},
		{name: "ready more recently first", first: newPod("a", readySince(time.Minute)), then: newPod("b", readySince(time.Hour))},
		{name: "more restarts first", first: newPod("a", restarts(3)), then: newPod("b", restarts(1))},
		{name: "newer first", first: newPod("a", created(time.Minute)), then: newPod("b", created(time.Hour))},
		{name: "similar ages: by UID", first: newPod("a", created(time.Hour)), then: newPod("b", created(time.Hour+time.Second))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !DeleteFirst(tt.first, tt.then, true, tt.rankA, tt.rankB, now) {
				t.Errorf("%s should be deleted before %s", tt.first.Name, tt.then.Name)
			}
			if DeleteFirst(tt.then, tt.first, true, tt.rankB, tt.rankA, now) {
				t.Errorf("ordering is not antisymmetric")
			}
		})
	}
}

// TestActiveFirst: upstream's ActivePods (Jobs) is DeleteFirst without the deletion cost
// and the rank, with exact times.
func TestActiveFirst(t *testing.T) {
	tests := []struct {
		name        string
		first, then *corev1.Pod
	}{
		{name: "unassigned before assigned", first: newPod("a", onNode("")), then: newPod("b")},
		{name: "pending before running", first: newPod("a", phase(corev1.PodPending)), then: newPod("b")},
		{name: "not ready before ready", first: newPod("a"), then: newPod("b", readySince(time.Minute))},
		{name: "deletion cost ignored: more restarts first", first: newPod("a", cost("100"), restarts(3)), then: newPod("b", restarts(1))},
		{name: "ready more recently first", first: newPod("a", readySince(time.Minute)), then: newPod("b", readySince(time.Hour))},
		{name: "exact ages: newer first even within a bucket", first: newPod("b", created(time.Hour)), then: newPod("a", created(time.Hour+time.Second))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !ActiveFirst(tt.first, tt.then) {
				t.Errorf("%s should be deleted before %s", tt.first.Name, tt.then.Name)
			}
			if ActiveFirst(tt.then, tt.first) {
				t.Errorf("ordering is not antisymmetric")
			}
		})
	}
}

func TestAvailability(t *testing.T) {
	ready := newPod("a", readySince(10*time.Second))
	if !IsAvailable(ready, 0, now) || !IsAvailable(ready, 10, now) || IsAvailable(ready, 11, now) {
		t.Errorf("availability of a pod ready for 10s is wrong")
	}
	if d := NextAvailabilityCheck(ready, 15, now); d == nil || *d != 5*time.Second {
		t.Errorf("next check = %v, want 5s", d)
	}
	if NextAvailabilityCheck(ready, 5, now) != nil || NextAvailabilityCheck(newPod("b"), 5, now) != nil {
		t.Errorf("no check is due for an available or unready pod")
	}
	if IsAvailable(newPod("b"), 0, now) {
		t.Errorf("an unready pod is not available")
	}
}

func TestActiveAndTerminating(t *testing.T) {
	deleting := newPod("a")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	finished := newPod("b", phase(corev1.PodSucceeded))
	if IsActive(deleting) || IsActive(finished) || !IsActive(newPod("c")) {
		t.Errorf("IsActive is wrong")
	}
	if !IsTerminating(deleting) || IsTerminating(finished) || IsTerminating(newPod("c")) {
		t.Errorf("IsTerminating is wrong")
	}
}

func TestKey(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}}
	want, err := toolscache.MetaNamespaceKeyFunc(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := Key(p); got != want || got != "ns/web-0" {
		t.Errorf("Key = %q, want %q (client-go's key)", got, want)
	}
}
