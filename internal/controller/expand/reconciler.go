// Package expand is upstream's persistentvolume-expander-controller. Upstream has deprecated
// it down to a dispatcher: when a bound claim asks for more storage than its status reports,
// it finds who expands the volume. A CSI volume is left to its driver's external resizer (the
// claim gets an ExternalExpanding Event); an in-tree volume migrated to CSI gets the
// volume.kubernetes.io/storage-resizer annotation naming the CSI driver whose resizer
// takes over; a FlexVolume is expanded on the control plane here (its size recorded on the
// volume and the claim's resize status moved on, RecoverVolumeExpansionFailure's way) and
// left to the kubelet for the file system.
package expand

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "persistentvolume-expander-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "expand-controller"
	// EventSource is the component upstream's Events report.
	EventSource = "volume_expand"

	// AnnResizer on a claim names the resizer that expands it.
	AnnResizer = "volume.kubernetes.io/storage-resizer"
	// AnnPreResizeCapacity on a volume is its claim's capacity before an expansion the node
	// has not finished.
	AnnPreResizeCapacity = "volume.alpha.kubernetes.io/pre-resize-capacity"
)

// Event reasons (pkg/controller/volume/events, pkg/kubelet/events).
const (
	ReasonExternalExpanding = "ExternalExpanding"
	ReasonResizeFailed      = "VolumeResizeFailed"
	ReasonResizeSuccess     = "VolumeResizeSuccessful"
)

// Reconciler expands the volumes of bound claims.
type Reconciler struct {
	// Client reads claims from the cache; it patches claims' status and volumes.
	Client client.Client
	// APIReader gets the claim's volume live, as upstream.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
}

// The shared cache lists and watches claims with kcm's identity; the controller's own gets the
// volume live and patches it, and patches the claim's status (the resizer annotation goes
// through the status subresource too, as upstream: the role grants no write on claims).
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims/status,verbs=patch

// SetupWithManager watches claims as upstream queues them: bound ones, when created or when
// their request or status capacity grows.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(claimChanges)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// claimChanges is upstream's event filter: a bound claim when it appears, and when its
// request grows (to expand) or its capacity grows (the node finished: the volume's
// pre-resize annotation may go).
var claimChanges = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return bound(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*corev1.PersistentVolumeClaim), e.ObjectNew.(*corev1.PersistentVolumeClaim)
		oldReq, newReq := o.Spec.Resources.Requests[corev1.ResourceStorage], n.Spec.Resources.Requests[corev1.ResourceStorage]
		oldCap, newCap := o.Status.Capacity[corev1.ResourceStorage], n.Status.Capacity[corev1.ResourceStorage]
		return bound(n) && (newReq.Cmp(oldReq) > 0 || newCap.Cmp(oldCap) > 0)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func bound(obj client.Object) bool {
	return obj.(*corev1.PersistentVolumeClaim).Status.Phase == corev1.ClaimBound
}

// Reconcile is upstream's syncHandler: claim and volume, whether expansion is wanted, who
// expands, then that expander's part.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pv := &corev1.PersistentVolume{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return reconcile.Result{}, fmt.Errorf("failed to get PV %q: %w", pvc.Spec.VolumeName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != pvc.Namespace || ref.UID != pvc.UID {
		// Retried with backoff, as upstream: the binder may not have finished.
		return reconcile.Result{}, fmt.Errorf("persistent Volume is not bound to PVC being updated : %s", req)
	}
	if !needsExpansion(pvc, pv) {
		return reconcile.Result{}, nil
	}

	who, plugin, resizer, err := expanderOf(pv)
	switch who {
	case byMigratedDriver:
		return reconcile.Result{}, r.handToMigratedDriver(ctx, pvc, plugin, resizer, err)
	case byKubelet:
		return reconcile.Result{}, r.expand(ctx, pvc, pv, resizer)
	default:
		// No requeue: the external controller's own watch moves the claim on.
		r.Recorder.Eventf(pvc, nil, corev1.EventTypeNormal, ReasonExternalExpanding, "Expanding",
			"waiting for an external controller to expand this PVC")
		log.FromContext(ctx).Info("Waiting for an external controller to expand the PVC", "pvcUID", pvc.UID)
		return reconcile.Result{}, nil
	}
}

// handToMigratedDriver annotates the claim of a migrated in-tree volume with its CSI driver,
// whose external resizer only expands claims that name it.
func (r *Reconciler) handToMigratedDriver(ctx context.Context, pvc *corev1.PersistentVolumeClaim, plugin, driver string, driverErr error) error {
	key := qualifiedName(pvc)
	r.Recorder.Eventf(pvc, nil, corev1.EventTypeNormal, ReasonExternalExpanding, "Expanding",
		"CSI migration enabled for %s; waiting for external resizer to expand the pvc", plugin)
	if driverErr != nil {
		return r.failExternal(pvc, fmt.Errorf("error getting CSI driver name for pvc %s, with error %v", key, driverErr))
	}
	if pvc.Annotations[AnnResizer] == driver {
		return nil
	}
	annotated := pvc.DeepCopy()
	withResizer(annotated, driver)
	if err := r.patchClaimStatus(ctx, pvc, annotated); err != nil {
		return r.failExternal(pvc, fmt.Errorf("error setting resizer annotation to pvc %s, with error %v", key, err))
	}
	return nil
}

func (r *Reconciler) failExternal(pvc *corev1.PersistentVolumeClaim, err error) error {
	r.Recorder.Eventf(pvc, nil, corev1.EventTypeWarning, ReasonExternalExpanding, "Expanding", err.Error())
	return err
}

// expand is the control-plane half of a FlexVolume's expansion (upstream's no-op expandable
// plugin: the size it is asked for is the size it reaches). A failure is reported on the
// claim as VolumeResizeFailed and retried.
func (r *Reconciler) expand(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, resizer string) error {
	next, size := nextStep(pvc, pv)
	var err error
	switch next {
	case stepNone:
		return nil
	case stepDropPreResize:
		// Upstream records no Event for this one.
		return r.dropPreResizeCapacity(ctx, pv)
	case stepNodePending:
		_, err = r.markNodePending(ctx, pvc, pv)
	case stepExpand:
		err = r.expandTo(ctx, pvc, pv, resizer, size)
	}
	if err != nil {
		r.Recorder.Eventf(pvc, nil, corev1.EventTypeWarning, ReasonResizeFailed, "Expanding", err.Error())
	}
	return err
}

// expandTo records the expansion as started, the volume's new size, then either the end of
// the resize (a block volume) or the node's turn (a file system to grow).
func (r *Reconciler) expandTo(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, resizer string, size resource.Quantity) error {
	key := qualifiedName(pvc)
	started := controllerResizeInProgress(pvc, resizer, size, metav1.NewTime(r.Clock.Now()))
	if err := r.patchClaimStatus(ctx, pvc, started); err != nil {
		return fmt.Errorf("error updating pvc %s with resize in progress: %v", key, err)
	}
	resized := pv.DeepCopy()
	resized.Spec.Capacity[corev1.ResourceStorage] = size
	if err := r.Client.Patch(ctx, resized, client.MergeFrom(pv)); err != nil {
		// The claim stays ControllerResizeInProgress: the retry expands to the allocated size.
		return fmt.Errorf("error updating pv for pvc %s: %v", key, err)
	}
	if !filesystemVolume(resized) {
		if err := r.patchClaimStatus(ctx, started, resizeFinished(started, size)); err != nil {
			return fmt.Errorf("error marking pvc %s as resized: %v", key, err)
		}
		r.Recorder.Eventf(pvc, nil, corev1.EventTypeNormal, ReasonResizeSuccess, "Expanding", "ExpandVolume succeeded for volume %s", key)
		return nil
	}
	if _, err := r.markNodePending(ctx, started, resized); err != nil {
		return fmt.Errorf("error marking pvc %s for node expansion: %v", key, err)
	}
	return nil
}

// markNodePending is upstream's markForPendingNodeExpansion: the claim waits for the kubelet
// (FileSystemResizePending, NodeResizePending) and the volume keeps the claim's capacity from
// before, which the binder reports if the claim is bound again before the node is done.
func (r *Reconciler) markNodePending(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	key := qualifiedName(pvc)
	pending := nodeResizePending(pvc, metav1.NewTime(r.Clock.Now()))
	if err := r.patchClaimStatus(ctx, pvc, pending); err != nil {
		return pvc, fmt.Errorf("error marking pvc %s for node expansion: %v", key, err)
	}
	if metav1.HasAnnotation(pv.ObjectMeta, AnnPreResizeCapacity) {
		return pending, nil
	}
	old := pending.Status.Capacity[corev1.ResourceStorage]
	annotated := pv.DeepCopy()
	metav1.SetMetaDataAnnotation(&annotated.ObjectMeta, AnnPreResizeCapacity, old.String())
	if err := r.Client.Patch(ctx, annotated, client.MergeFrom(pv)); err != nil {
		err = fmt.Errorf("error updating pv %s annotation (%s) with pre-resize capacity %s: %v", pv.Name, AnnPreResizeCapacity, old.String(), err)
		log.FromContext(ctx).Info("Warning: " + err.Error())
		return pending, err
	}
	return pending, nil
}

// dropPreResizeCapacity removes the volume's pre-resize capacity once the node finished.
func (r *Reconciler) dropPreResizeCapacity(ctx context.Context, pv *corev1.PersistentVolume) error {
	clean := pv.DeepCopy()
	delete(clean.Annotations, AnnPreResizeCapacity)
	return r.Client.Patch(ctx, clean, client.MergeFrom(pv))
}

// patchClaimStatus writes the claim's status (and annotations) through the status
// subresource as a patch guarded by the claim's resourceVersion, as upstream's
// PatchPVCStatus: a claim changed meanwhile is a conflict, retried from the new version.
func (r *Reconciler) patchClaimStatus(ctx context.Context, old, updated *corev1.PersistentVolumeClaim) error {
	if err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patchPVCStatus failed to patch PVC %q: %w", old.Name, err)
	}
	return nil
}

// qualifiedName is upstream's GetPersistentVolumeClaimQualifiedName.
func qualifiedName(pvc *corev1.PersistentVolumeClaim) string {
	return pvc.Namespace + "/" + pvc.Name
}
