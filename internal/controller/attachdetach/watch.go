package attachdetach

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// The VolumeAttachment indexes: by node, and by the volume the source names.
const (
	attachmentNodeField   = "spec.nodeName"
	attachmentVolumeField = "spec.source.volume"
)

var (
	attachmentsByNode = index.Index{Object: &storagev1.VolumeAttachment{}, Field: attachmentNodeField,
		Extract: func(obj client.Object) []string { return []string{obj.(*storagev1.VolumeAttachment).Spec.NodeName} }}
	attachmentsByVolume = index.Index{Object: &storagev1.VolumeAttachment{}, Field: attachmentVolumeField,
		Extract: func(obj client.Object) []string {
			if k := attachmentKey(obj.(*storagev1.VolumeAttachment)); k != "" {
				return []string{k}
			}
			return nil
		}}
)

// volumeKey is the attachmentsByVolume key of a volume: its PersistentVolume, or for an
// inline volume its driver and handle.
func volumeKey(v *volume) string {
	if v.PVName != "" {
		return "pv/" + v.PVName
	}
	return "inline/" + v.Driver + "^" + v.Handle
}

// attachmentKey is the attachmentsByVolume key of a VolumeAttachment.
func attachmentKey(va *storagev1.VolumeAttachment) string {
	src := va.Spec.Source
	switch {
	case src.PersistentVolumeName != nil:
		return "pv/" + *src.PersistentVolumeName
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return "inline/" + src.InlineVolumeSpec.CSI.Driver + "^" + src.InlineVolumeSpec.CSI.VolumeHandle
	}
	return ""
}

// SetupWithManager registers the reconciler: nodes, and the pods, VolumeAttachments,
// claims, volumes and CSIDrivers that change what a node needs or has, mapped to the nodes
// they concern.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.initState()
	registerMetrics(r)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(nodeChanges)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(nodeOfPod), builder.WithPredicates(podChanges)).
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(r.nodesOfAttachment)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.nodesOfClaim)).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(r.nodesOfVolume)).
		Watches(&storagev1.CSIDriver{}, handler.EnqueueRequestsFromMapFunc(r.allNodes)).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: workers}).
		Complete(r)
}

// initState makes the in-memory state empty: what upstream rebuilds at start.
func (r *Reconciler) initState() {
	r.detachRequested = map[string]map[corev1.UniqueVolumeName]time.Time{}
	r.multiAttachReported = map[string]map[corev1.UniqueVolumeName]bool{}
	r.failureReported = map[string]map[string]string{}
	r.lastInUse = map[string]map[corev1.UniqueVolumeName]bool{}
	r.deleted = map[string]map[string]types.UID{}
	r.announced = map[string]map[corev1.UniqueVolumeName]bool{}
	r.created = map[string]map[corev1.UniqueVolumeName]time.Time{}
	r.stats = map[string]nodeStats{}
}

// nodeChanges passes node updates that change what the controller reads of a node: the
// annotation, volumesInUse and volumesAttached, the out-of-service taint, readiness (the
// kubelet's heartbeats change nothing else it reads).
var nodeChanges = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
	_, om := o.Annotations[ManagedAnnotation]
	_, nm := n.Annotations[ManagedAnnotation]
	ov, nv := view(o, true), view(n, true)
	return om != nm || ov.Healthy != nv.Healthy || ov.OutOfService != nv.OutOfService ||
		!slices.Equal(o.Status.VolumesInUse, n.Status.VolumesInUse) ||
		!slices.Equal(o.Status.VolumesAttached, n.Status.VolumesAttached)
}}

// podChanges passes pods with volumes that may need attaching, on updates only when the
// pod is scheduled or stops needing its volumes.
var podChanges = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return concerns(e.Object.(*corev1.Pod)) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return concerns(e.Object.(*corev1.Pod)) },
	GenericFunc: func(e event.GenericEvent) bool { return concerns(e.Object.(*corev1.Pod)) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return concerns(n) && (o.Spec.NodeName != n.Spec.NodeName || podNeedsVolumes(o) != podNeedsVolumes(n))
	},
}

func concerns(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return mayNeedAttaching(&v) || v.CSI != nil
	})
}

func nodeOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	return requests(obj.(*corev1.Pod).Spec.NodeName)
}

// nodesOfAttachment is the attachment's node and, when it names a volume, the nodes of the
// pods that use it: one waiting for the volume to leave another node is attached then.
func (r *Reconciler) nodesOfAttachment(ctx context.Context, obj client.Object) []reconcile.Request {
	va := obj.(*storagev1.VolumeAttachment)
	reqs := requests(va.Spec.NodeName)
	if name := va.Spec.Source.PersistentVolumeName; name != nil {
		pv := &corev1.PersistentVolume{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: *name}, pv); err == nil {
			reqs = append(reqs, r.nodesOfVolume(ctx, pv)...)
		}
	}
	return reqs
}

// nodesOfClaim is the nodes of the pods that use the claim.
func (r *Reconciler) nodesOfClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{index.PodClaimName: obj.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var nodes []string
	for i := range pods.Items {
		if n := pods.Items[i].Spec.NodeName; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	return requests(nodes...)
}

// nodesOfVolume is the nodes of the pods that use the claim the volume is bound to.
func (r *Reconciler) nodesOfVolume(ctx context.Context, obj client.Object) []reconcile.Request {
	ref := obj.(*corev1.PersistentVolume).Spec.ClaimRef
	if ref == nil {
		return nil
	}
	claim := &corev1.PersistentVolumeClaim{}
	claim.Namespace, claim.Name = ref.Namespace, ref.Name
	return r.nodesOfClaim(ctx, claim)
}

// allNodes: a CSIDriver's attachRequired concerns every node with its volumes; drivers
// change rarely.
func (r *Reconciler) allNodes(ctx context.Context, _ client.Object) []reconcile.Request {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(nodes.Items))
	for i := range nodes.Items {
		reqs = append(reqs, requests(nodes.Items[i].Name)...)
	}
	return reqs
}

func requests(nodes ...string) []reconcile.Request {
	var reqs []reconcile.Request
	for _, n := range nodes {
		if n != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
		}
	}
	return reqs
}
