package daemonset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/owned"
	"github.com/kcm/kcm/internal/pod"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// podHandler maps a pod event to the DaemonSet its controller reference names, recording
// the creations and deletions that DaemonSet's expectations wait for. Only orphans (which a
// DaemonSet may adopt) are matched against the DaemonSets of their namespace.
func (r *Reconciler) podHandler() *owned.PodHandler {
	return &owned.PodHandler{
		Reader:   r.Client,
		OwnerGVK: dsGVK,
		NewOwner: func() client.Object { return &appsv1.DaemonSet{} },
		Adopters: func(ctx context.Context, ns string) ([]owned.Adopter, error) {
			list := &appsv1.DaemonSetList{}
			err := r.Client.List(ctx, list, client.InNamespace(ns))
			out := make([]owned.Adopter, len(list.Items))
			for i := range list.Items {
				out[i] = owned.Adopter{Key: client.ObjectKeyFromObject(&list.Items[i]), Selector: list.Items[i].Spec.Selector}
			}
			return out, err
		},
		Created: r.creations.CreationObserved,
		Deleted: func(owner types.NamespacedName, p *corev1.Pod, _ bool) {
			r.deletions.DeletionObserved(owner, pod.Key(p))
		},
	}
}

// nodeHandler maps a node event to the DaemonSets whose eligibility for the node it may
// change, listing DaemonSets once per event: a new node to those that should run there, a
// changed node to those whose verdict changed, a removed node to those that had pods there.
type nodeHandler struct{ r *Reconciler }

func (h *nodeHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	node := e.Object.(*corev1.Node)
	h.queue(ctx, q, func(ds *appsv1.DaemonSet) bool { return nodeEligibility(node, ds, h.r.ComparisonOperators).shouldRun })
}

func (h *nodeHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
	if equality.Semantic.DeepEqual(old.Labels, cur.Labels) && equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		return
	}
	h.queue(ctx, q, func(ds *appsv1.DaemonSet) bool {
		return nodeEligibility(old, ds, h.r.ComparisonOperators) != nodeEligibility(cur, ds, h.r.ComparisonOperators)
	})
}

func (h *nodeHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	node := e.Object.(*corev1.Node)
	h.queue(ctx, q, func(ds *appsv1.DaemonSet) bool {
		return nodeEligibility(node, ds, h.r.ComparisonOperators).shouldContinueRunning
	})
}

func (h *nodeHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h *nodeHandler) queue(ctx context.Context, q queue, affected func(*appsv1.DaemonSet) bool) {
	list := &appsv1.DaemonSetList{}
	if err := h.r.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Listing DaemonSets for a node event")
		return
	}
	for i := range list.Items {
		if affected(&list.Items[i]) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
}
