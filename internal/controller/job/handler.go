package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/ownership"
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
type podHandler struct{ r *Reconciler }

func (h *podHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	p := e.Object.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (e.g. after a restart).
		h.deleted(ctx, p, false, q)
		return
	}
	if job, ok := h.owner(ctx, p); ok {
		h.r.expectations.CreationObserved(job)
		h.enqueue(job, q)
		return
	}
	h.queueMatching(ctx, p, q)
}

func (h *podHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		// Graceful deletion has begun: the deletion a scale-down waits for.
		h.deleted(ctx, cur, false, q)
		return
	}
	// The finalizer may have been removed and re-added for another owner between two
	// events: the latest state is what counts.
	finalizerGone := !hasTrackingFinalizer(cur)
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged {
		if job, ok := h.owner(ctx, old); ok {
			if finalizerGone {
				h.r.finalizers.observed(job, cur.UID)
			}
			h.enqueue(job, q)
		}
	}
	if job, ok := h.owner(ctx, cur); ok {
		if finalizerGone {
			h.r.finalizers.observed(job, cur.UID)
		}
		h.enqueue(job, q)
		return
	}
	if refChanged || !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		h.queueMatching(ctx, cur, q)
	}
}

func (h *podHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.deleted(ctx, e.Object.(*corev1.Pod), true, q)
}

func (h *podHandler) Generic(context.Context, event.GenericEvent, queue) {}

// deleted handles a pod being deleted (final: gone from the API).
func (h *podHandler) deleted(ctx context.Context, p *corev1.Pod, final bool, q queue) {
	job, ok := h.owner(ctx, p)
	if !ok {
		return
	}
	h.r.expectations.DeletionObserved(job, podKey(p))
	if final || !hasTrackingFinalizer(p) {
		h.r.finalizers.observed(job, p.UID)
	}
	h.enqueue(job, q)
}

func (h *podHandler) enqueue(job types.NamespacedName, q queue) {
	q.AddAfter(reconcile.Request{NamespacedName: job}, h.r.BatchPeriod)
}

// owner resolves the pod's controller to the Job in the cache with the UID it names.
func (h *podHandler) owner(ctx context.Context, p *corev1.Pod) (types.NamespacedName, bool) {
	job, ok := controllingJob(ctx, h.r.Client, p)
	if !ok {
		return types.NamespacedName{}, false
	}
	return client.ObjectKeyFromObject(job), true
}

// controllingJob returns the batch/v1 Job that controls the pod, from the cache.
func controllingJob(ctx context.Context, c client.Reader, p *corev1.Pod) (*batchv1.Job, bool) {
	job, ok := ownership.Controller(ctx, c, p, jobGVK, &batchv1.Job{})
	if !ok {
		return nil, false
	}
	return job, true
}

// queueMatching queues every Job whose selector matches an orphan pod: one may adopt it.
func (h *podHandler) queueMatching(ctx context.Context, p *corev1.Pod, q queue) {
	jobs := &batchv1.JobList{}
	if err := h.r.Client.List(ctx, jobs, client.InNamespace(p.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Listing the Jobs that may adopt a pod", "pod", podKey(p))
		return
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		h.enqueue(client.ObjectKeyFromObject(job), q)
	}
}
