package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/ownership"
)

// orphanControllerName names the companion controller; upstream runs the same work on a
// second queue ("job_orphan_pod") of the job-controller.
const orphanControllerName = ControllerName + "-orphan-pod"

// orphanReconciler removes the tracking finalizer from pods that no running Job tracks:
// orphans, pods whose Job is gone, and pods of a finished Job. Without it such pods could
// never be deleted. Pods of a Job managed by another controller are left alone, and so
// are pods controlled by anything but a Job.
type orphanReconciler struct {
	client client.Client
}

func (r *orphanReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !r.untracked(ctx, p) {
		return reconcile.Result{}, nil
	}
	if err := removeTrackingFinalizer(ctx, r.client, p); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).V(2).Info("Removed the tracking finalizer of a pod no Job tracks")
	return reconcile.Result{}, nil
}

// untracked reports whether the pod holds the tracking finalizer but no running Job
// managed by this controller tracks it.
func (r *orphanReconciler) untracked(ctx context.Context, p *corev1.Pod) bool {
	if !hasTrackingFinalizer(p) {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return true
	}
	if ref.Kind != jobGVK.Kind || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return false
	}
	job, ok := ownership.Controller(ctx, r.client, p, jobGVK, &batchv1.Job{})
	if !ok {
		return true
	}
	return !managedByOther(job) && isFinished(job)
}

func (r *orphanReconciler) setupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(orphanControllerName).
		Watches(&corev1.Pod{}, handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.enqueueIfUntracked(ctx, e.Object.(*corev1.Pod), q)
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.enqueueIfUntracked(ctx, e.ObjectNew.(*corev1.Pod), q)
			},
		}).
		// A Job that finishes or goes away leaves its pods to this controller.
		Watches(&batchv1.Job{}, handler.Funcs{
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if job := e.ObjectNew.(*batchv1.Job); isFinished(job) {
					r.enqueuePodsOf(ctx, job, q)
				}
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.enqueuePodsOf(ctx, e.Object.(*batchv1.Job), q)
			},
		}).
		WithOptions(controller.Options{
			NewQueue:                newOrphanQueue,
			MaxConcurrentReconciles: workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](apiBackoff, maxAPIBackoff),
		}).
		Complete(r)
}

func (r *orphanReconciler) enqueueIfUntracked(ctx context.Context, p *corev1.Pod, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if r.untracked(ctx, p) {
		q.Add(requestFor(p))
	}
}

// enqueuePodsOf queues the pods the Job controls that still hold the finalizer.
func (r *orphanReconciler) enqueuePodsOf(ctx context.Context, job *batchv1.Job, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if managedByOther(job) {
		return
	}
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingFields{index.ControllerUID: string(job.UID)}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the pods of a Job", "job", client.ObjectKeyFromObject(job))
		return
	}
	for i := range pods.Items {
		if hasTrackingFinalizer(&pods.Items[i]) {
			q.Add(requestFor(&pods.Items[i]))
		}
	}
}
