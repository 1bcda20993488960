package ttl

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// nodeHandler is upstream's node event handler: it counts the nodes as they are added and
// deleted and queues added and updated nodes. When the count moves the cluster to another
// boundary step, every node is queued, so that all of them get the new TTL without waiting
// for their next update.
type nodeHandler struct{ r *Reconciler }

func (h *nodeHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	if h.resized(ctx, e.Object.GetName(), true, q) {
		return
	}
	q.Add(request(e.Object.GetName()))
}

func (h *nodeHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	// Every update is a chance to correct the annotation, as upstream relies on.
	q.Add(request(e.ObjectNew.GetName()))
}

func (h *nodeHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	// A deleted node itself needs nothing.
	h.resized(ctx, e.Object.GetName(), false, q)
}

func (h *nodeHandler) Generic(context.Context, event.GenericEvent, queue) {}

// resized records the change of size and, when it moves the boundary step, queues every
// node and reports true.
func (h *nodeHandler) resized(ctx context.Context, name string, added bool, q queue) bool {
	changed, ttl, nodes := h.r.resize(name, added)
	if !changed {
		return false
	}
	log.FromContext(ctx).V(2).Info("Cluster size crossed a TTL boundary, queueing every node", "nodes", nodes, "ttlSeconds", ttl)
	for _, n := range h.r.names() {
		q.Add(request(n))
	}
	return true
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}
