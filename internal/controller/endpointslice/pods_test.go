package endpointslice

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingQueue records AddAfter calls.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added map[string]time.Duration
}

func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) { q.added[r.String()] = d }

func TestPodEventsBatch(t *testing.T) {
	svc := func(ns, name string, selector map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: selector}}
	}
	cl := fake.NewClientBuilder().WithObjects(
		svc("ns", "web", map[string]string{"app": "web"}),
		svc("ns", "other", map[string]string{"app": "db"}),
		svc("ns", "manual", nil),
		svc("ns2", "web", map[string]string{"app": "web"}),
	).Build()
	r := &Reconciler{Client: cl, BatchPeriod: 5 * time.Second}
	h := r.podEvents()
	ctx := context.Background()

	q := &recordingQueue{added: map[string]time.Duration{}}
	old := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	cur := old.DeepCopy()
	cur.ResourceVersion = "2"
	cur.Status.Conditions[0].Status = corev1.ConditionFalse
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: cur}, q)
	if fmt.Sprint(q.added) != "map[ns/web:5s]" {
		t.Errorf("readiness change queued %v, want ns/web after the 5s batch period", q.added)
	}

	q.added = map[string]time.Duration{}
	cur = old.DeepCopy()
	cur.ResourceVersion = "3"
	cur.Annotations = map[string]string{"irrelevant": "yes"}
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: cur}, q)
	if len(q.added) != 0 {
		t.Errorf("irrelevant change queued %v", q.added)
	}

	q.added = map[string]time.Duration{}
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", Labels: map[string]string{"app": "db"}}}}, q)
	if fmt.Sprint(q.added) != "map[ns/other:5s]" {
		t.Errorf("new db pod queued %v", q.added)
	}
}
