package daemonset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
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

// podHandler maps a pod event to the DaemonSet its controller reference names, recording
// the creations and deletions that DaemonSet's expectations wait for. Only orphans (which a
// DaemonSet may adopt) are matched against the DaemonSets of their namespace.
type podHandler struct{ r *Reconciler }

func (h *podHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	p := e.Object.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		h.deleted(ctx, p, q)
		return
	}
	if owner, ok := h.owner(ctx, p); ok {
		h.r.creations.CreationObserved(owner)
		q.Add(reconcile.Request{NamespacedName: owner})
		return
	}
	if metav1.GetControllerOfNoCopy(p) == nil {
		h.queueMatching(ctx, p, q)
	}
}

func (h *podHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		h.deleted(ctx, cur, q)
		return
	}
	oldOwner, oldOK := h.owner(ctx, old)
	curOwner, curOK := h.owner(ctx, cur)
	if oldOK && (!curOK || oldOwner != curOwner) {
		q.Add(reconcile.Request{NamespacedName: oldOwner})
	}
	if curOK {
		q.Add(reconcile.Request{NamespacedName: curOwner})
		return
	}
	if metav1.GetControllerOfNoCopy(cur) == nil &&
		(oldOK || !equality.Semantic.DeepEqual(old.Labels, cur.Labels)) {
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
	h.r.deletions.DeletionObserved(owner, podKey(p))
	q.Add(reconcile.Request{NamespacedName: owner})
}

// owner is the DaemonSet the pod's controller reference names, read from the cache to check
// its UID (a DaemonSet recreated under the same name is another owner).
func (h *podHandler) owner(ctx context.Context, p *corev1.Pod) (types.NamespacedName, bool) {
	ds, ok := ownership.Controller(ctx, h.r.Client, p, dsGVK, &appsv1.DaemonSet{})
	return client.ObjectKeyFromObject(ds), ok
}

// queueMatching queues the DaemonSets of the orphan's namespace whose selector matches it.
func (h *podHandler) queueMatching(ctx context.Context, p *corev1.Pod, q queue) {
	list := &appsv1.DaemonSetList{}
	if err := h.r.Client.List(ctx, list, &client.ListOptions{Namespace: p.Namespace}); err != nil {
		log.FromContext(ctx).Error(err, "Listing DaemonSets for an orphan pod", "pod", podKey(p))
		return
	}
	for i := range list.Items {
		ds := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}})
	}
}

// nodeHandler maps a node event to the DaemonSets whose eligibility for the node it may
// change, listing DaemonSets once per event: a new node to those that should run there, a
// changed node to those whose verdict changed, a removed node to those that had pods there.
type nodeHandler struct{ r *Reconciler }

func (h *nodeHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	node := e.Object.(*corev1.Node)
	h.queue(ctx, q, func(ds *appsv1.DaemonSet) bool { return nodeEligibility(node, ds).shouldRun })
}

func (h *nodeHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
	if equality.Semantic.DeepEqual(old.Labels, cur.Labels) && equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		return
	}
	h.queue(ctx, q, func(ds *appsv1.DaemonSet) bool {
		return nodeEligibility(old, ds) != nodeEligibility(cur, ds)
	})
}

func (h *nodeHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	node := e.Object.(*corev1.Node)
	h.queue(ctx, q, func(ds *appsv1.DaemonSet) bool { return nodeEligibility(node, ds).shouldContinueRunning })
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
