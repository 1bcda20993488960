// Package owned is what the controllers that own pods (or other children) share: the pod
// event handler that maps a pod to the owner that controls it (or to the owners that could
// adopt it) while recording what the owner's expectations wait for, and the cache list of an
// owner's children and the orphans it may adopt.
package owned

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/ownership"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Adopter is an owner that may adopt an orphan pod its selector matches.
type Adopter struct {
	Key      types.NamespacedName
	Selector *metav1.LabelSelector
}

// PodHandler is upstream's addPod/updatePod/deletePod of the ReplicaSet, DaemonSet and Job
// controllers, once: a pod with a controller reference concerns only the live owner of the
// handled kind that reference names (an owner recreated under the same name is another);
// an orphan concerns every owner whose selector matches it, one of which may adopt it. The
// hooks record what the owner's expectations wait for.
type PodHandler struct {
	// Reader reads owners, usually the cache.
	Reader client.Reader
	// OwnerGVK is the handled owner kind; NewOwner returns an empty object of it.
	OwnerGVK schema.GroupVersionKind
	NewOwner func() client.Object
	// Adopters lists the owners of a namespace and their selectors, for orphans.
	Adopters func(ctx context.Context, namespace string) ([]Adopter, error)

	// Created: the owner's pod was created (a creation its expectations wait for).
	Created func(owner types.NamespacedName)
	// Deleted: the owner's pod began graceful deletion, or is gone (final).
	Deleted func(owner types.NamespacedName, p *corev1.Pod, final bool)
	// Updated (optional): cur, a pod the owner controls or controlled until this update,
	// changed in another way.
	Updated func(owner types.NamespacedName, cur *corev1.Pod)

	// Delay queues owners after it rather than at once (Job's batch period).
	Delay time.Duration
	// DeleteOldOnRelabel also handles the old pod as deleted when its deletion begins in
	// the update that changed its labels (upstream's ReplicaSet controller does; its
	// DaemonSet and Job controllers do not).
	DeleteOldOnRelabel bool
}

var _ handler.TypedEventHandler[client.Object, reconcile.Request] = &PodHandler{}

func (h *PodHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	p := e.Object.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (e.g. after a restart).
		h.deleted(ctx, p, false, q)
		return
	}
	if metav1.GetControllerOfNoCopy(p) != nil {
		if owner, ok := h.owner(ctx, p); ok {
			h.Created(owner)
			h.enqueue(owner, q)
		}
		return
	}
	h.queueAdopters(ctx, p, q)
}

func (h *PodHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		// A resync: nothing changed.
		return
	}
	labelsChanged := !equality.Semantic.DeepEqual(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// Graceful deletion has begun: that is the deletion a scale-down waits for.
		h.deleted(ctx, cur, false, q)
		if h.DeleteOldOnRelabel && labelsChanged {
			h.deleted(ctx, old, false, q)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		// Released or taken over: the old owner must hear of it.
		if owner, ok := h.owner(ctx, old); ok {
			h.updated(owner, cur)
			h.enqueue(owner, q)
		}
	}
	if curRef != nil {
		if owner, ok := h.owner(ctx, cur); ok {
			h.updated(owner, cur)
			h.enqueue(owner, q)
		}
		return
	}
	if labelsChanged || refChanged {
		h.queueAdopters(ctx, cur, q)
	}
}

func (h *PodHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.deleted(ctx, e.Object.(*corev1.Pod), true, q)
}

func (h *PodHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h *PodHandler) deleted(ctx context.Context, p *corev1.Pod, final bool, q queue) {
	owner, ok := h.owner(ctx, p)
	if !ok {
		return
	}
	h.Deleted(owner, p, final)
	h.enqueue(owner, q)
}

func (h *PodHandler) updated(owner types.NamespacedName, cur *corev1.Pod) {
	if h.Updated != nil {
		h.Updated(owner, cur)
	}
}

func (h *PodHandler) enqueue(owner types.NamespacedName, q queue) {
	if h.Delay > 0 {
		q.AddAfter(reconcile.Request{NamespacedName: owner}, h.Delay)
		return
	}
	q.Add(reconcile.Request{NamespacedName: owner})
}

func (h *PodHandler) owner(ctx context.Context, p *corev1.Pod) (types.NamespacedName, bool) {
	o, ok := ownership.Controller(ctx, h.Reader, p, h.OwnerGVK, h.NewOwner())
	return client.ObjectKeyFromObject(o), ok
}

// queueAdopters queues every owner whose selector matches the orphan (an empty or invalid
// selector matches nothing).
func (h *PodHandler) queueAdopters(ctx context.Context, p *corev1.Pod, q queue) {
	adopters, err := h.Adopters(ctx, p.Namespace)
	if err != nil {
		log.FromContext(ctx).Error(err, "Listing the owners that may adopt a pod", "pod", client.ObjectKeyFromObject(p), "kind", h.OwnerGVK.Kind)
		return
	}
	for _, a := range adopters {
		sel, err := metav1.LabelSelectorAsSelector(a.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		h.enqueue(a.Key, q)
	}
}
