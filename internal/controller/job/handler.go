package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/owned"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// jobHandler queues a Job at once when it is created, deleted or its spec changes, and
// after the batch period for status-only updates (mostly our own writes). A finished Job
// needs no sync.
type jobHandler struct{ r *Reconciler }

func (h *jobHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	q.Add(requestFor(e.Object))
}

func (h *jobHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*batchv1.Job), e.ObjectNew.(*batchv1.Job)
	if isFinished(cur) {
		return
	}
	if old.Generation != cur.Generation {
		q.Add(requestFor(cur))
		return
	}
	q.AddAfter(requestFor(cur), h.r.BatchPeriod)
}

func (h *jobHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	q.Add(requestFor(e.Object))
}

func (h *jobHandler) Generic(context.Context, event.GenericEvent, queue) {}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// podHandler queues the Job of a pod that changed, after the batch period, and records
// the creations, deletions and finalizer removals the Job's expectations wait for.
func (r *Reconciler) podHandler() *owned.PodHandler {
	return &owned.PodHandler{
		Reader:   r.Client,
		OwnerGVK: jobGVK,
		NewOwner: func() client.Object { return &batchv1.Job{} },
		Adopters: func(ctx context.Context, ns string) ([]owned.Adopter, error) {
			jobs := &batchv1.JobList{}
			err := r.Client.List(ctx, jobs, client.InNamespace(ns))
			out := make([]owned.Adopter, len(jobs.Items))
			for i := range jobs.Items {
				out[i] = owned.Adopter{Key: client.ObjectKeyFromObject(&jobs.Items[i]), Selector: jobs.Items[i].Spec.Selector}
			}
			return out, err
		},
		Created: r.expectations.CreationObserved,
		Deleted: func(job types.NamespacedName, p *corev1.Pod, final bool) {
			r.expectations.DeletionObserved(job, podKey(p))
			// A pod gone, or being deleted without the finalizer, will show no removal.
			if final || !hasTrackingFinalizer(p) {
				r.finalizers.observed(job, p.UID)
			}
		},
		Updated: func(job types.NamespacedName, cur *corev1.Pod) {
			// The finalizer may have been removed and re-added for another owner between
			// two events: the latest state is what counts.
			if !hasTrackingFinalizer(cur) {
				r.finalizers.observed(job, cur.UID)
			}
		},
		Delay: r.BatchPeriod,
	}
}
