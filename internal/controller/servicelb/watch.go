package servicelb

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/setup"
)

// newQueue names the work queue as upstream names its service queue:
// k8s.io/cloud-provider@v0.37.1/controllers/service/controller.go:121. Upstream's "node"
// queue has no counterpart: node changes are queued as the Services they concern.
var newQueue = setup.Queue("service")

// SetupWithManager queues Services as upstream's informer handlers do, every served
// Service on a node change that can change load balancers' node sets, and, with
// RequeueWaiting, the Services waiting for an address when a load balancer is deleted.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	switch {
	case r.Client == nil:
		return fmt.Errorf("%s: Client is required", ControllerName)
	case r.Recorder == nil:
		return fmt.Errorf("%s: Recorder is required", ControllerName)
	case r.Balancer == nil:
		return fmt.Errorf("%s: Balancer is required", ControllerName)
	}
	if r.RateLimiter == nil {
		r.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minRetryDelay, maxRetryDelay)
	}
	r.records = map[types.NamespacedName]*record{}
	r.released = make(chan event.GenericEvent)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Service{}, builder.WithPredicates(r.serviceChanges())).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.servedServices), builder.WithPredicates(nodeChanges)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers, RateLimiter: r.RateLimiter})
	if r.RequeueWaiting {
		b = b.WatchesRawSource(source.Channel(r.released, handler.EnqueueRequestsFromMapFunc(r.waitingServices)))
	}
	return b.Complete(r)
}

// serviceChanges are upstream's Service handlers: a new Service it serves or must clean up
// (after a restart), an update that changes its load balancer or asks for cleanup. A
// deletion needs nothing: the finalizer makes it an update first.
func (r *Reconciler) serviceChanges() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			svc, ok := e.Object.(*corev1.Service)
			return ok && (wantsLoadBalancer(svc, r.Class) || needsCleanup(svc))
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*corev1.Service)
			cur, ok2 := e.ObjectNew.(*corev1.Service)
			return ok1 && ok2 && (needsUpdate(old, cur, r.Class) || needsCleanup(cur))
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// nodeChanges are upstream's node handlers: every node added or deleted, and an update that
// can move it in or out of the node set (shouldSyncUpdatedNode).
var nodeChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.Node)
		cur, ok2 := e.ObjectNew.(*corev1.Node)
		return ok1 && ok2 && shouldSyncUpdatedNode(old, cur)
	},
}

// servedServices maps a node change to every Service the controller serves; Reconcile then
// calls UpdateLoadBalancer for those whose node set changed.
func (r *Reconciler) servedServices(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.listServices(ctx, func(svc *corev1.Service) bool { return wantsLoadBalancer(svc, r.Class) })
}

// waitingServices maps a deleted load balancer to the Services still without an address, so
// that one waiting on an exhausted pool takes the freed address now rather than after its
// backoff.
func (r *Reconciler) waitingServices(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.listServices(ctx, func(svc *corev1.Service) bool { return waitingForAddress(svc, r.Class) })
}

// listServices reads the cache's Services without copies: keep only looks, and only keys leave.
func (r *Reconciler) listServices(ctx context.Context, keep func(*corev1.Service) bool) []reconcile.Request {
	list := &corev1.ServiceList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Listing services from the cache")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
