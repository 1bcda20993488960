package deployment

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
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// replicaSetHandler maps ReplicaSet events to Deployments as upstream: a controlled
// ReplicaSet to its Deployment (and, when its controller changed, the previous one), an
// orphan whose labels changed to every Deployment selecting it, which may adopt it.
type replicaSetHandler struct{ client client.Reader }

func (h *replicaSetHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	rs := e.Object.(*appsv1.ReplicaSet)
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		h.enqueueController(ctx, rs.Namespace, ref, q)
		return
	}
	if rs.DeletionTimestamp == nil {
		h.enqueueSelecting(ctx, rs, q)
	}
}

func (h *replicaSetHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	old, cur := e.ObjectOld.(*appsv1.ReplicaSet), e.ObjectNew.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		h.enqueueController(ctx, old.Namespace, oldRef, q)
	}
	if curRef != nil {
		h.enqueueController(ctx, cur.Namespace, curRef, q)
		return
	}
	if refChanged || !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		h.enqueueSelecting(ctx, cur, q)
	}
}

func (h *replicaSetHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	rs, ok := e.Object.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		h.enqueueController(ctx, rs.Namespace, ref, q)
	}
}

func (h *replicaSetHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h *replicaSetHandler) enqueueController(ctx context.Context, namespace string, ref *metav1.OwnerReference, q queue) {
	if d := resolveDeployment(ctx, h.client, namespace, ref); d != nil {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
	}
}

// enqueueSelecting queues the Deployments whose selector matches an orphan ReplicaSet.
func (h *replicaSetHandler) enqueueSelecting(ctx context.Context, rs *appsv1.ReplicaSet, q queue) {
	if len(rs.Labels) == 0 {
		return
	}
	list := &appsv1.DeploymentList{}
	if err := h.client.List(ctx, list, client.InNamespace(rs.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Listing Deployments for an orphan ReplicaSet", "replicaSet", client.ObjectKeyFromObject(rs))
		return
	}
	for _, d := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		// A nil or empty selector matches nothing here.
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
	}
}

// resolveDeployment returns the Deployment a controller reference names, when it exists
// with that UID, or nil.
func resolveDeployment(ctx context.Context, c client.Reader, namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != deploymentGVK.Kind {
		return nil
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, d); err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// recreateDeploymentOfPod maps a deleted pod to the Recreate Deployment controlling its
// ReplicaSet: that Deployment may be waiting for its old pods to be gone.
func (r *Reconciler) recreateDeploymentOfPod(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs := &appsv1.ReplicaSet{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}, rs); err != nil || rs.UID != ref.UID {
		return nil
	}
	dref := metav1.GetControllerOfNoCopy(rs)
	if dref == nil {
		return nil
	}
	d := resolveDeployment(ctx, r.Client, rs.Namespace, dref)
	if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(d)}}
}
