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
	"github.com/kcm/kcm/internal/pod"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// jobHandler queues a Job at once when it is created, deleted or its spec changes, and
// after the batch period for status-only updates (mostly our own writes). A finished Job
// needs no sync.
type jobHandler struct{ r *Reconciler }

func (h *jobHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	q.Add(requestFor(e.Object))
	// Upstream counts each Job its informer adds (the initial list included) that another
	// controller manages.
	if j, ok := e.Object.(*batchv1.Job); ok && managedByOther(j) {
		jobsByExternalController.WithLabelValues(*j.Spec.ManagedBy).Inc()
	}
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
			r.expectations.DeletionObserved(job, pod.Key(p))
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

// trackedPodHandler counts, as upstream's pod event handlers do, every pod of the cluster
// (owned by a Job or not) that becomes or stops being a finished pod holding the tracking
// finalizer, then hands the event on.
type trackedPodHandler struct{ *owned.PodHandler }

func (h trackedPodHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	recordTrackedPod(nil, e.Object.(*corev1.Pod))
	h.PodHandler.Create(ctx, e, q)
}

func (h trackedPodHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	recordTrackedPod(e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod))
	h.PodHandler.Update(ctx, e, q)
}

func (h trackedPodHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	// Upstream cannot read a pod out of a tombstone here.
	if !e.DeleteStateUnknown {
		recordTrackedPod(e.Object.(*corev1.Pod), nil)
	}
	h.PodHandler.Delete(ctx, e, q)
}

// recordTrackedPod counts an add when a pod becomes finished with the tracking finalizer,
// a delete when it stops being one (its finalizer removed, or the pod gone).
func recordTrackedPod(old, cur *corev1.Pod) {
	was, is := finishedWithFinalizer(old), finishedWithFinalizer(cur)
	switch {
	case !was && is:
		terminatedPodsWithFinalizer.WithLabelValues("add").Inc()
	case was && !is:
		terminatedPodsWithFinalizer.WithLabelValues("delete").Inc()
	}
}

func finishedWithFinalizer(p *corev1.Pod) bool {
	return p != nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) && hasTrackingFinalizer(p)
}
