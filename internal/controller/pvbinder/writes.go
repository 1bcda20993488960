package pvbinder

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// bind saves the binding in upstream's order, each write from the result of the one before:
// the volume's claimRef (and bound-by-controller), the volume phase Bound, the claim's
// volumeName (and bind-completed, bound-by-controller), the claim phase Bound. A failure
// stops it; the next sync of either object finishes the binding.
func (b *Binder) bind(ctx context.Context, v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	v, err := b.bindVolumeToClaim(ctx, v, claim)
	if err != nil {
		return fmt.Errorf("binding volume %s to claim %s/%s: %w", v.Name, claim.Namespace, claim.Name, err)
	}
	if v, err = b.updateVolumePhase(ctx, v, corev1.VolumeBound, ""); err != nil {
		return err
	}
	if claim, err = b.bindClaimToVolume(ctx, claim, v); err != nil {
		return fmt.Errorf("binding claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, v.Name, err)
	}
	_, err = b.updateClaimStatus(ctx, claim, corev1.ClaimBound, v)
	return err
}

// bindVolumeToClaim points the volume's claimRef at the claim (UID included) and marks it
// bound by the controller unless the user pre-bound it to this claim (upstream's
// GetBindVolumeToClaim).
func (b *Binder) bindVolumeToClaim(ctx context.Context, v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	clone, dirty, err := storagehelpers.GetBindVolumeToClaim(v, claim)
	if err != nil {
		return v, err
	}
	if !dirty {
		return v, nil
	}
	if err := b.Client.Update(ctx, clone); err != nil {
		return v, err
	}
	log.FromContext(ctx).V(2).Info("Claim bound to volume", "volume", v.Name)
	return clone, nil
}

// bindClaimToVolume sets the claim's volumeName (bound-by-controller when the controller
// chose it) and bind-completed.
func (b *Binder) bindClaimToVolume(ctx context.Context, claim *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	clone := claim.DeepCopy()
	dirty := false
	if claim.Spec.VolumeName != v.Name {
		clone.Spec.VolumeName = v.Name
		if !metav1.HasAnnotation(clone.ObjectMeta, AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, AnnBoundByController, "yes")
		}
		dirty = true
	}
	if !metav1.HasAnnotation(clone.ObjectMeta, AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, AnnBindCompleted, "yes")
		dirty = true
	}
	if !dirty {
		return claim, nil
	}
	if err := b.Client.Update(ctx, clone); err != nil {
		return claim, err
	}
	log.FromContext(ctx).V(2).Info("Volume bound to claim", "volume", v.Name)
	return clone, nil
}

// claimStatus is the claim status for phase: the volume's access modes and, when the claim
// just enters the phase, its capacity (the pre-resize capacity while a resize is pending)
// and, from Pending to Bound, its volumeAttributesClassName. Without a volume those are
// cleared.
func claimStatus(claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, v *corev1.PersistentVolume) (corev1.PersistentVolumeClaimStatus, error) {
	s := *claim.Status.DeepCopy()
	s.Phase = phase
	if v == nil {
		s.AccessModes, s.Capacity, s.CurrentVolumeAttributesClassName = nil, nil, nil
		return s, nil
	}
	s.AccessModes = v.Spec.AccessModes
	if claim.Status.Phase != phase {
		volumeCap, ok := v.Spec.Capacity[corev1.ResourceStorage]
		if !ok {
			return s, fmt.Errorf("PersistentVolume %q is without a storage capacity", v.Name)
		}
		if pre, ok := v.Annotations[AnnPreResizeCapacity]; ok {
			q, err := resource.ParseQuantity(pre)
			if err != nil {
				q = volumeCap
			}
			if s.Capacity == nil {
				s.Capacity = corev1.ResourceList{}
			}
			s.Capacity[corev1.ResourceStorage] = q
		} else if claimCap, ok := claim.Status.Capacity[corev1.ResourceStorage]; !ok || volumeCap.Cmp(claimCap) != 0 {
			s.Capacity = v.Spec.Capacity
		}
	}
	if claim.Status.Phase == corev1.ClaimPending && phase == corev1.ClaimBound {
		s.CurrentVolumeAttributesClassName = v.Spec.VolumeAttributesClassName
	}
	return s, nil
}

// updateClaimStatus writes the claim's status for phase when it differs.
func (b *Binder) updateClaimStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, v *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	status, err := claimStatus(claim, phase, v)
	if err != nil {
		return claim, err
	}
	if equality.Semantic.DeepEqual(claim.Status, status) {
		return claim, nil
	}
	clone := claim.DeepCopy()
	clone.Status = status
	if err := b.Client.Status().Update(ctx, clone); err != nil {
		return claim, fmt.Errorf("updating status of claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	log.FromContext(ctx).V(2).Info("Claim entered phase", "phase", phase)
	return clone, nil
}

// updateClaimStatusWithEvent moves the claim to phase and, only on that change, reports it.
func (b *Binder) updateClaimStatusWithEvent(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, eventType, reason, note string) error {
	if claim.Status.Phase == phase {
		return nil
	}
	updated, err := b.updateClaimStatus(ctx, claim, phase, nil)
	if err != nil {
		return err
	}
	b.Recorder.Eventf(updated, nil, eventType, reason, "Binding", note)
	return nil
}

// updateVolumePhase writes the volume's phase and message when the phase differs; the API
// server stamps lastPhaseTransitionTime.
func (b *Binder) updateVolumePhase(ctx context.Context, v *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, message string) (*corev1.PersistentVolume, error) {
	if v.Status.Phase == phase {
		return v, nil
	}
	clone := v.DeepCopy()
	clone.Status.Phase = phase
	clone.Status.Message = message
	if err := b.Client.Status().Update(ctx, clone); err != nil {
		return v, fmt.Errorf("updating phase of volume %s: %w", v.Name, err)
	}
	log.FromContext(ctx).V(2).Info("Volume entered phase", "volume", v.Name, "phase", phase)
	return clone, nil
}

// updateVolumePhaseWithEvent moves the volume to phase and, only on that change, reports it.
func (b *Binder) updateVolumePhaseWithEvent(ctx context.Context, v *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, eventType, reason, note string) (*corev1.PersistentVolume, error) {
	if v.Status.Phase == phase {
		return v, nil
	}
	updated, err := b.updateVolumePhase(ctx, v, phase, note)
	if err != nil {
		return v, err
	}
	b.Recorder.Eventf(updated, nil, eventType, reason, "Reclaiming", note)
	return updated, nil
}

// unbindVolume undoes a binding: a volume the controller bound loses its claimRef, one the
// user pre-bound keeps it without the UID. Then it is Available again.
func (b *Binder) unbindVolume(ctx context.Context, v *corev1.PersistentVolume) error {
	clone := v.DeepCopy()
	if metav1.HasAnnotation(v.ObjectMeta, AnnBoundByController) {
		clone.Spec.ClaimRef = nil
		delete(clone.Annotations, AnnBoundByController)
		if len(clone.Annotations) == 0 {
			clone.Annotations = nil
		}
	} else {
		clone.Spec.ClaimRef.UID = ""
	}
	if err := b.Client.Update(ctx, clone); err != nil {
		return fmt.Errorf("rolling back the binding of volume %s: %w", v.Name, err)
	}
	_, err := b.updateVolumePhase(ctx, clone, corev1.VolumeAvailable, "")
	return err
}
