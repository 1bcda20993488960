package pvbinder

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// claimReconciler syncs one claim: upstream's syncClaim.
type claimReconciler struct{ *Binder }

func (r *claimReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			// A provision still timed for a deleted claim never ends.
			r.operations.forget(req.String())
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return r.done(ctx, r.syncClaim(ctx, claim))
}

func (r *claimReconciler) syncClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if ann, changed := migrationAnnotations(claim.Annotations, true); changed {
		clone := claim.DeepCopy()
		clone.Annotations = ann
		if err := r.Client.Update(ctx, clone); err != nil {
			return fmt.Errorf("updating migration annotations of claim: %w", err)
		}
		claim = clone
	}
	if metav1.HasAnnotation(claim.ObjectMeta, AnnBindCompleted) {
		return r.syncBoundClaim(ctx, claim)
	}
	if claim.Spec.VolumeName != "" {
		return r.syncPreBoundClaim(ctx, claim)
	}
	return r.syncUnboundClaim(ctx, claim)
}

// syncUnboundClaim binds a claim that did not name a volume to the best match, or else
// assigns the default class, waits for the scheduler, or asks for provisioning.
func (r *claimReconciler) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	class, err := r.classOf(ctx, claim)
	if err != nil {
		return err
	}
	delayBinding, err := waitsForFirstConsumer(class)
	if err != nil {
		return err
	}
	var node *corev1.Node
	if name, ok := claim.Annotations[AnnSelectedNode]; ok && delayBinding {
		node = r.selectedNode(ctx, name)
	}
	volumes, err := r.listVolumes(ctx)
	if err != nil {
		return err
	}
	v, err := FindBestMatch(claim, volumes, delayBinding, node)
	if err != nil {
		return fmt.Errorf("error finding PV for claim %q: %w", claim.Namespace+"/"+claim.Name, err)
	}
	if v != nil {
		// A bound claim ends its provision, if it had one; a failed bind counts an error.
		err := r.bind(ctx, v.DeepCopy(), claim)
		r.operations.record(claimKey(claim), err)
		return err
	}

	if assigned, err := r.assignDefaultClass(ctx, claim); err != nil || assigned {
		// An assigned class brings the claim back with its update.
		recordRetroactiveClass(err)
		return err
	}
	switch {
	case delayBinding && !storagehelpers.IsDelayBindingProvisioning(claim):
		if err := r.waitForFirstConsumer(ctx, claim); err != nil {
			return err
		}
	case storagehelpers.GetPersistentVolumeClaimClass(claim) != "":
		// The provisioner (or the administrator) creates a volume; its event brings the
		// claim back.
		return r.provision(ctx, claim, class)
	default:
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, ReasonFailedBinding, "Binding",
			"no persistent volumes available for this claim and no storage class is set")
	}
	_, err = r.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	return err
}

// syncPreBoundClaim binds a claim to the volume its spec.volumeName names, when that volume
// exists, fits and is not someone else's.
func (r *claimReconciler) syncPreBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	v := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: claim.Spec.VolumeName}, v); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		// The volume may be created later.
		_, err = r.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
	switch {
	case v.Spec.ClaimRef == nil:
		if err := CheckVolumeSatisfiesClaim(v, claim); err != nil {
			r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonVolumeMismatch, "Binding",
				"Cannot bind to requested volume %q: %s", v.Name, err)
			_, err = r.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
			return err
		}
		return r.bind(ctx, v, claim)
	case storagehelpers.IsVolumeBoundToClaim(v, claim):
		// The volume names the claim too: finish the binding (the claimRef gets the UID).
		return r.bind(ctx, v, claim)
	default:
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonFailedBinding, "Binding",
			"volume %q already bound to a different claim.", v.Name)
		if metav1.HasAnnotation(claim.ObjectMeta, AnnBoundByController) {
			// Someone removed bind-completed from a claim the controller bound.
			return fmt.Errorf("invalid binding of claim %q to volume %q: volume already claimed by %q",
				claim.Namespace+"/"+claim.Name, v.Name, v.Spec.ClaimRef.Namespace+"/"+v.Spec.ClaimRef.Name)
		}
		_, err := r.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
}

// syncBoundClaim keeps a claim that was bound: Lost when its volume is gone or taken by
// another claim, the binding repaired otherwise.
func (r *claimReconciler) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		return r.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, corev1.EventTypeWarning, ReasonClaimLost,
			"Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	v := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: claim.Spec.VolumeName}, v); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		return r.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, corev1.EventTypeWarning, ReasonClaimLost,
			"Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	}
	if v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID == claim.UID {
		// Unbound volume (or a cache not showing the binding yet): bind again; bound: a no-op
		// unless a phase or annotation is missing.
		return r.bind(ctx, v, claim)
	}
	return r.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, corev1.EventTypeWarning, ReasonClaimMisbound,
		"Two claims are bound to the same volume, this one is bound incorrectly")
}

// classOf returns the claim's StorageClass from the cache, nil when it has none or the class
// does not exist.
func (r *claimReconciler) classOf(ctx context.Context, claim *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	name := storagehelpers.GetPersistentVolumeClaimClass(claim)
	if name == "" {
		return nil, nil
	}
	class := &storagev1.StorageClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return class, nil
}

// waitsForFirstConsumer reports whether binding waits for the scheduler.
func waitsForFirstConsumer(class *storagev1.StorageClass) (bool, error) {
	if class == nil {
		return false, nil
	}
	if class.VolumeBindingMode == nil {
		return false, fmt.Errorf("VolumeBindingMode not set for StorageClass %q", class.Name)
	}
	return *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// selectedNode returns the node the scheduler chose, or one that has only its name when the
// cache does not know it (only volumes without label affinity fit then).
func (r *claimReconciler) selectedNode(ctx context.Context, name string) *corev1.Node {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return node
}

func (r *claimReconciler) listVolumes(ctx context.Context) ([]*corev1.PersistentVolume, error) {
	list := &corev1.PersistentVolumeList{}
	// Read-only: FindBestMatch does not modify them, and the chosen one is copied.
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*corev1.PersistentVolume, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// assignDefaultClass gives a claim that left its class unset (nil, not "") the default
// StorageClass, retroactively as upstream: the newest default class, by name on a tie.
func (r *claimReconciler) assignDefaultClass(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	if storagehelpers.PersistentVolumeClaimHasClass(claim) {
		return false, nil
	}
	list := &storagev1.StorageClassList{}
	if err := r.Client.List(ctx, list); err != nil {
		return false, err
	}
	def := DefaultClass(list.Items)
	if def == nil {
		return false, nil
	}
	clone := claim.DeepCopy()
	clone.Spec.StorageClassName = &def.Name
	if err := r.Client.Update(ctx, clone); err != nil {
		return false, fmt.Errorf("can't update PersistentVolumeClaim[%q]: %w", claim.Namespace+"/"+claim.Name, err)
	}
	log.FromContext(ctx).V(4).Info("Assigned the default StorageClass to the claim", "storageClass", def.Name)
	return true, nil
}

// DefaultClass picks the default StorageClass: of those annotated as default, the newest,
// the first by name among equally new ones; nil when none is.
func DefaultClass(classes []storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for i := range classes {
		c := &classes[i]
		if c.Annotations[AnnIsDefaultClass] != "true" && c.Annotations[AnnBetaIsDefaultClass] != "true" {
			continue
		}
		if best == nil {
			best = c
			continue
		}
		bt, ct := best.CreationTimestamp.UnixNano(), c.CreationTimestamp.UnixNano()
		if ct > bt || (ct == bt && c.Name < best.Name) {
			best = c
		}
	}
	return best
}

// waitForFirstConsumer reports a claim whose binding waits for the scheduler: for its
// unscheduled pods by name, or for a first pod to use it.
func (r *claimReconciler) waitForFirstConsumer(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(claim.Namespace), client.MatchingFields{index.PodClaimName: claim.Name}); err != nil {
		return err
	}
	var waiting []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" && !podTerminated(p) {
			waiting = append(waiting, p.Name)
		}
	}
	switch len(waiting) {
	case 0:
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, ReasonWaitForFirstConsumer, "Binding",
			"waiting for first consumer to be created before binding")
	case 1:
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, ReasonWaitForPodScheduled, "Binding",
			"waiting for pod %s to be scheduled", waiting[0])
	default:
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, ReasonWaitForPodScheduled, "Binding",
			"waiting for pods %s to be scheduled", strings.Join(waiting, ","))
	}
	return nil
}

// podTerminated is upstream's IsPodTerminated: finished, or deleted with nothing running.
func podTerminated(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.State.Terminated == nil && s.State.Waiting == nil {
				return false
			}
		}
	}
	return true
}
