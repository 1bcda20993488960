package triggertime

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestObserve(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", CreationTimestamp: metav1.NewTime(created)}}
	readyAt := func(name string, at time.Time) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at),
			}}},
		}
	}
	var tr Tracker
	t1, t2 := created.Add(time.Minute), created.Add(2*time.Minute)
	if got := tr.Observe(svc, []*corev1.Pod{readyAt("a", t1)}); !got.Equal(created) {
		t.Errorf("first sync = %v, want the Service's creation", got)
	}
	if got := tr.Observe(svc, []*corev1.Pod{readyAt("a", t1)}); !got.IsZero() {
		t.Errorf("nothing changed = %v, want zero", got)
	}
	if got := tr.Observe(svc, []*corev1.Pod{readyAt("a", t2), readyAt("b", t1.Add(30*time.Second))}); !got.Equal(t1.Add(30 * time.Second)) {
		t.Errorf("two changes = %v, want the earliest", got)
	}
	if got := tr.Observe(svc, []*corev1.Pod{readyAt("a", t2)}); !got.IsZero() {
		t.Errorf("a pod gone = %v, want zero", got)
	}
	tr.Forget(types.NamespacedName{Namespace: "ns", Name: "svc"})
	if got := tr.Observe(svc, []*corev1.Pod{readyAt("a", t2)}); !got.Equal(created) {
		t.Errorf("after Forget = %v, want the Service's creation, as a first sync", got)
	}
}
