package setup

import (
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Queue is a controller.Options NewQueue that names the controller's work queue as
// upstream's kube-controller-manager names the queue it stands for ("deployment",
// "endpoint_slice", ...): the workqueue_* series carry that name, so dashboards and alerts
// written for upstream keep working. Only the name differs from controller-runtime's default
// queue (a priority queue with the controller's rate limiter); the controller keeps kcm's
// name in logs. A controller with no upstream queue keeps the default, named after itself.
func Queue(name string) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return TypedQueue[reconcile.Request](name)
}

// TypedQueue is Queue for a controller of typed requests.
func TypedQueue[T comparable](name string) func(string, workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return func(controllerName string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
		return priorityqueue.New(name, func(o *priorityqueue.Opts[T]) {
			o.Log = ctrl.Log.WithValues("controller", controllerName)
			o.RateLimiter = rateLimiter
		})
	}
}
