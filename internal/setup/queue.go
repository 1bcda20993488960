package setup

import (
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/track"
)

// Queue is a controller.Options NewQueue that names the controller's work queue as
// upstream's kube-controller-manager names the queue it stands for ("deployment",
// "endpoint_slice", ...) and reports it as upstream's queues report: the workqueue_* families
// of component-base, labelled {name} only (procmetrics.WorkqueueProvider), so dashboards and
// alerts written for upstream keep working. Otherwise it is controller-runtime's default
// queue (a priority queue with the controller's rate limiter), whose own metrics carry
// controller-runtime's labels ({name, controller}, and priority on depth); the controller
// keeps kcm's name in logs. A controller with no upstream queue passes its own name: every
// kcm queue reports through Queue, none through controller-runtime's metrics.
func Queue(name string) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return TypedQueue[reconcile.Request](name)
}

// TypedQueue is Queue for a controller of typed requests.
//
// A queue of reconcile.Requests also records each key's queue state and last syncs in the
// controller's per-object views (track.For(controllerName).Queue), and starts them afresh.
// Queues of other requests (the garbage collector's, storage-version-migrator's,
// serviceaccount-token's) are not tracked: their items are not an object's key.
func TypedQueue[T comparable](name string) func(string, workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return func(controllerName string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
		rl, tracked := any(rateLimiter).(workqueue.TypedRateLimiter[reconcile.Request])
		var views *track.Controller
		if tracked {
			views = track.For(controllerName)
			rateLimiter = any(views.RateLimiter(rl)).(workqueue.TypedRateLimiter[T])
		}
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[T]) {
			o.Log = ctrl.Log.WithValues("controller", controllerName)
			o.RateLimiter = rateLimiter
			o.MetricProvider = procmetrics.WorkqueueProvider()
		})
		if tracked {
			return any(views.Queue(any(q).(priorityqueue.PriorityQueue[reconcile.Request]), rl)).(workqueue.TypedRateLimitingInterface[T])
		}
		return q
	}
}
