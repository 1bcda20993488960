package ttl

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func node(i int) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i)}}
}

// drain empties the queue and returns how many nodes were queued.
func drain(q queue) int {
	n := 0
	for q.Len() > 0 {
		item, _ := q.Get()
		q.Done(item)
		q.Forget(item)
		n++
	}
	return n
}

func TestNodeHandler(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	r := &Reconciler{nodes: map[string]struct{}{}}
	h := &nodeHandler{r: r}

	for i := range 100 {
		h.Create(ctx, event.CreateEvent{Object: node(i)}, q)
	}
	if n := drain(q); n != 100 || r.desired() != 0 {
		t.Fatalf("100 nodes: queued %d, TTL %d; want 100, 0", n, r.desired())
	}
	// The 101st node moves the cluster to 15s: every node is queued.
	h.Create(ctx, event.CreateEvent{Object: node(100)}, q)
	if n := drain(q); n != 101 || r.desired() != 15 {
		t.Fatalf("101 nodes: queued %d, TTL %d; want 101, 15", n, r.desired())
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: node(3), ObjectNew: node(3)}, q)
	if n := drain(q); n != 1 {
		t.Fatalf("update: queued %d, want 1", n)
	}
	// Down to 90: within the hysteresis, nothing to do.
	for i := 100; i >= 90; i-- {
		h.Delete(ctx, event.DeleteEvent{Object: node(i)}, q)
	}
	if n := drain(q); n != 0 || r.desired() != 15 {
		t.Fatalf("90 nodes: queued %d, TTL %d; want 0, 15", n, r.desired())
	}
	// 89: back to 0, every remaining node is queued.
	h.Delete(ctx, event.DeleteEvent{Object: node(89)}, q)
	if n := drain(q); n != 89 || r.desired() != 0 {
		t.Fatalf("89 nodes: queued %d, TTL %d; want 89, 0", n, r.desired())
	}
}
