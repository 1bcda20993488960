package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/index"
)

// Kind adapts one API type to the replica logic, which works on apps/v1 ReplicaSets: a
// ReplicationController is viewed as the equivalent ReplicaSet, as upstream does.
type Kind struct {
	// ControllerName is upstream's controller name.
	ControllerName string
	// EventSource is the source.component of its Events, as upstream's.
	EventSource string
	GVK         schema.GroupVersionKind
	New         func() client.Object
	// View returns the object as a ReplicaSet; it shares no memory with obj.
	View func(obj client.Object) *appsv1.ReplicaSet
	// SetStatus writes a ReplicaSet status into obj.
	SetStatus func(obj client.Object, status appsv1.ReplicaSetStatus)
	// List returns the objects of this kind in a namespace, viewed as ReplicaSets.
	List func(ctx context.Context, r client.Reader, namespace string) ([]*appsv1.ReplicaSet, error)
	// SiblingUIDs lists, read-only from the cache, the UIDs of the objects of this kind in a
	// namespace whose controller is controller (a Deployment's ReplicaSets).
	SiblingUIDs func(ctx context.Context, r client.Reader, namespace string, controller types.UID) ([]types.UID, error)
	// TerminatingReplicas says whether the status has the terminatingReplicas field.
	TerminatingReplicas bool
}

// ReplicaSetKind is the replicaset-controller's kind.
var ReplicaSetKind = Kind{
	ControllerName: "replicaset-controller",
	EventSource:    "replicaset-controller",
	GVK:            appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
	New:            func() client.Object { return &appsv1.ReplicaSet{} },
	View:           func(obj client.Object) *appsv1.ReplicaSet { return obj.(*appsv1.ReplicaSet).DeepCopy() },
	SetStatus: func(obj client.Object, status appsv1.ReplicaSetStatus) {
		obj.(*appsv1.ReplicaSet).Status = status
	},
	List: func(ctx context.Context, r client.Reader, namespace string) ([]*appsv1.ReplicaSet, error) {
		list := &appsv1.ReplicaSetList{}
		if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		out := make([]*appsv1.ReplicaSet, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	},
	// Through the ReplicaSets-by-controller index, without copies: a Deployment's siblings
	// are read for their UIDs only, and listing every ReplicaSet of the namespace with a copy
	// each made every sync cost as much as the namespace (the profile's top item).
	SiblingUIDs: func(ctx context.Context, r client.Reader, namespace string, controller types.UID) ([]types.UID, error) {
		list := &appsv1.ReplicaSetList{}
		if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{index.ControllerUID: string(controller)},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		uids := make([]types.UID, len(list.Items))
		for i := range list.Items {
			uids[i] = list.Items[i].UID
		}
		return uids, nil
	},
	TerminatingReplicas: true,
}

// ReplicationControllerKind is the replicationcontroller-controller's kind.
var ReplicationControllerKind = Kind{
	ControllerName: "replicationcontroller-controller",
	EventSource:    "replication-controller",
	GVK:            corev1.SchemeGroupVersion.WithKind("ReplicationController"),
	New:            func() client.Object { return &corev1.ReplicationController{} },
	View:           func(obj client.Object) *appsv1.ReplicaSet { return rcAsReplicaSet(obj.(*corev1.ReplicationController)) },
	SetStatus: func(obj client.Object, status appsv1.ReplicaSetStatus) {
		rc := obj.(*corev1.ReplicationController)
		rc.Status = corev1.ReplicationControllerStatus{
			Replicas:             status.Replicas,
			FullyLabeledReplicas: status.FullyLabeledReplicas,
			ReadyReplicas:        status.ReadyReplicas,
			AvailableReplicas:    status.AvailableReplicas,
			ObservedGeneration:   status.ObservedGeneration,
		}
		for _, c := range status.Conditions {
			rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
				Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			})
		}
	},
	List: func(ctx context.Context, r client.Reader, namespace string) ([]*appsv1.ReplicaSet, error) {
		list := &corev1.ReplicationControllerList{}
		if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		out := make([]*appsv1.ReplicaSet, len(list.Items))
		for i := range list.Items {
			out[i] = rcAsReplicaSet(&list.Items[i])
		}
		return out, nil
	},
	// ReplicationControllers rarely have a controller: no index, a read-only list.
	SiblingUIDs: func(ctx context.Context, r client.Reader, namespace string, controller types.UID) ([]types.UID, error) {
		list := &corev1.ReplicationControllerList{}
		if err := r.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		var uids []types.UID
		for i := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&list.Items[i]); ref != nil && ref.UID == controller {
				uids = append(uids, list.Items[i].UID)
			}
		}
		return uids, nil
	},
}

// rcAsReplicaSet converts as upstream's conversion does: the map selector becomes
// matchLabels (a nil selector selects nothing).
func rcAsReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"},
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Replicas != nil {
		rs.Spec.Replicas = new(*rc.Spec.Replicas)
	}
	if rc.Spec.Selector != nil {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for k, v := range rc.Spec.Selector {
			rs.Spec.Selector.MatchLabels[k] = v
		}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}
