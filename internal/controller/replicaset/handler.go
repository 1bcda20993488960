package replicaset

import (
	"context"

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

// podHandler maps pod events to the owners to sync, as upstream's pod event handlers do, and
// records the creations and deletions the owners' expectations wait for.
type podHandler struct{ r *Reconciler }

func (h *podHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	p := e.Object.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (e.g. after a restart).
		h.deleted(ctx, p, q)
		return
	}
	if owner, ok := h.owner(ctx, p); ok {
		h.r.expectations.CreationObserved(owner)
		q.Add(reconcile.Request{NamespacedName: owner})
		return
	}
	h.queueMatching(ctx, p, q)
}

func (h *podHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !equality.Semantic.DeepEqual(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// Graceful deletion has begun: that is the deletion the owner waits for. The old
		// labels may have matched another owner, which must hear of it too.
		h.deleted(ctx, cur, q)
		if labelsChanged {
			h.deleted(ctx, old, q)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged {
		if owner, ok := h.owner(ctx, old); ok {
			q.Add(reconcile.Request{NamespacedName: owner})
		}
	}
	if owner, ok := h.owner(ctx, cur); ok {
		q.Add(reconcile.Request{NamespacedName: owner})
		return
	}
	if labelsChanged || refChanged {
		h.queueMatching(ctx, cur, q)
	}
}

func (h *podHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.deleted(ctx, e.Object.(*corev1.Pod), q)
}

func (h *podHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h *podHandler) deleted(ctx context.Context, p *corev1.Pod, q queue) {
	owner, ok := h.owner(ctx, p)
	if !ok {
		return
	}
	h.r.expectations.DeletionObserved(owner, podKey(p))
	q.Add(reconcile.Request{NamespacedName: owner})
}

// owner resolves the pod's controller to an existing object of our kind with the UID the
// reference names.
func (h *podHandler) owner(ctx context.Context, p *corev1.Pod) (types.NamespacedName, bool) {
	o, ok := ownership.Controller(ctx, h.r.Client, p, h.r.Kind.GVK, h.r.Kind.New())
	return client.ObjectKeyFromObject(o), ok
}

// queueMatching queues every owner of our kind whose selector matches an orphan pod: one of
// them may adopt it.
func (h *podHandler) queueMatching(ctx context.Context, p *corev1.Pod, q queue) {
	owners, err := h.r.Kind.List(ctx, h.r.Client, p.Namespace)
	if err != nil {
		log.FromContext(ctx).Error(err, "Listing owners of an orphan pod", "pod", podKey(p))
		return
	}
	for _, rs := range owners {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}})
	}
}
