package pvbinder

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/storagemetrics"
)

// volumeReconciler syncs one volume: upstream's syncVolume.
type volumeReconciler struct{ *Binder }

func (r *volumeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	v := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, req.NamespacedName, v); err != nil {
		if apierrors.IsNotFound(err) {
			// The volume is gone: its deletion, if timed, has ended.
			r.operations.record(req.Name, nil)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return r.done(ctx, r.syncVolume(ctx, v))
}

func (r *volumeReconciler) syncVolume(ctx context.Context, v *corev1.PersistentVolume) error {
	v, err := r.annealMigration(ctx, v)
	if err != nil {
		return err
	}
	if v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID == "" {
		// Unused, or pre-bound to a claim by name that the claim's sync binds.
		_, err := r.updateVolumePhase(ctx, v, corev1.VolumeAvailable, "")
		return err
	}
	claim, err := r.claimOf(ctx, v)
	if err != nil {
		return err
	}
	switch {
	case claim == nil:
		// The claim is gone: release the volume (a Failed one stays Failed while the
		// reclaim is retried, for the user to see) and apply its reclaim policy.
		if v.Status.Phase != corev1.VolumeReleased && v.Status.Phase != corev1.VolumeFailed {
			log.FromContext(ctx).V(2).Info("Volume is released and reclaim policy will be executed", "reclaimPolicy", v.Spec.PersistentVolumeReclaimPolicy)
			if v, err = r.updateVolumePhase(ctx, v, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return r.reclaim(ctx, v)
	case claim.Spec.VolumeName == "":
		if storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &v.Spec) {
			// The claim's sync will never pick this volume.
			r.Recorder.Eventf(v, nil, corev1.EventTypeWarning, ReasonVolumeMismatch, "Binding",
				"Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name)
			r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonVolumeMismatch, "Binding",
				"Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", v.Name)
		}
		// The claim's sync (this volume's event queued it) finishes the binding.
		return nil
	case claim.Spec.VolumeName == v.Name:
		_, err := r.updateVolumePhase(ctx, v, corev1.VolumeBound, "")
		return err
	case metav1.HasAnnotation(v.ObjectMeta, AnnDynamicallyProvisioned) && v.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that got bound elsewhere: not needed any more.
		if v.Status.Phase != corev1.VolumeReleased && v.Status.Phase != corev1.VolumeFailed {
			if v, err = r.updateVolumePhase(ctx, v, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return r.reclaim(ctx, v)
	default:
		// The claim is bound to another volume: undo the controller's binding, or keep the
		// user's pre-binding without the UID.
		return r.unbindVolume(ctx, v)
	}
}

// annealMigration writes the migrated-to annotation and deletion finalizers a dynamically
// provisioned volume should carry.
func (r *volumeReconciler) annealMigration(ctx context.Context, v *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	ann, annChanged := migrationAnnotations(v.Annotations, false)
	finalizers, finChanged := deletionFinalizers(v)
	if !annChanged && !finChanged {
		return v, nil
	}
	clone := v.DeepCopy()
	clone.Annotations, clone.Finalizers = ann, finalizers
	if err := r.Client.Update(ctx, clone); err != nil {
		return v, fmt.Errorf("persistent Volume Controller can't anneal migration annotations or finalizer: %w", err)
	}
	return clone, nil
}

// claimOf returns the claim the volume's claimRef names, nil when it no longer exists (or
// was re-created with another UID). A claim the cache does not show, or shows with another
// UID, is read from the API server before the volume is released: an external provisioner
// or the scheduler may have bound the volume to a claim the cache has not seen yet.
func (r *volumeReconciler) claimOf(ctx context.Context, v *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := v.Spec.ClaimRef
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	claim := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, key, claim)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	case err == nil && claim.UID == ref.UID:
		return claim, nil
	case err != nil && (v.Status.Phase == corev1.VolumeReleased || v.Status.Phase == corev1.VolumeFailed):
		return nil, nil
	}
	if err := r.APIReader.Get(ctx, key, claim); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if claim.UID != ref.UID {
		return nil, nil
	}
	return claim, nil
}

// reclaim applies the reclaim policy of a released volume: Retain keeps it; Delete leaves
// it to the external provisioner that made it (or to the plugin of an in-tree volume, which
// kcm does not have: the volume fails); Recycle, deprecated, scrubs an NFS or hostPath
// volume with a recycler pod (recycle.go).
func (r *volumeReconciler) reclaim(ctx context.Context, v *corev1.PersistentVolume) error {
	if v.Annotations[AnnMigratedTo] != "" {
		// The CSI driver's provisioner reclaims migrated volumes.
		return nil
	}
	switch v.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		return nil
	case corev1.PersistentVolumeReclaimRecycle:
		return r.recycle(ctx, v)
	case corev1.PersistentVolumeReclaimDelete:
		// Timed until the volume is gone, whoever deletes it; an error counts.
		r.operations.start(v.Name, r.deleterName(ctx, v), "delete")
		err := r.deleteVolume(ctx, v)
		if err != nil {
			r.operations.record(v.Name, err)
		}
		return err
	default:
		_, err := r.updateVolumePhaseWithEvent(ctx, v, corev1.VolumeFailed, corev1.EventTypeWarning, ReasonUnknownReclaimPolicy,
			"Volume has unrecognized PersistentVolumeReclaimPolicy")
		return err
	}
}

// deleter names who deletes a volume's storage: "" for an external deleter (a CSI volume,
// or one a non-"kubernetes.io/" provisioner made), hostPathPlugin, or an error when an
// in-tree volume has no plugin.
func deleter(v *corev1.PersistentVolume) (string, error) {
	if p := v.Annotations[AnnDynamicallyProvisioned]; p != "" {
		switch {
		case p == hostPathPlugin:
			return hostPathPlugin, nil
		case !strings.HasPrefix(p, "kubernetes.io/"):
			return "", nil
		}
		return "", fmt.Errorf("no deletable volume plugin matched")
	}
	if v.Annotations[AnnMigratedTo] != "" || v.Spec.CSI != nil {
		return "", nil
	}
	if v.Spec.HostPath != nil {
		return hostPathPlugin, nil
	}
	return "", fmt.Errorf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", v.Name)
}

var hostPathDeletable = regexp.MustCompile("/tmp/.+")

// deleteVolume is upstream's deleteVolumeOperation with kcm's one plugin, hostPath (which
// only deletes under /tmp, for testing, as upstream's).
func (r *volumeReconciler) deleteVolume(ctx context.Context, v *corev1.PersistentVolume) error {
	plugin, err := deleter(v)
	if err != nil {
		_, err = r.updateVolumePhaseWithEvent(ctx, v, corev1.VolumeFailed, corev1.EventTypeWarning, ReasonVolumeFailedDelete, err.Error())
		return err
	}
	if plugin == "" {
		log.FromContext(ctx).V(3).Info("External deleter for volume requested, ignoring")
		return nil
	}
	path := ""
	if v.Spec.HostPath != nil {
		path = v.Spec.HostPath.Path
	}
	if v.Spec.HostPath == nil {
		err = fmt.Errorf("failed to create deleter for volume %q: spec.PersistentVolumeSource.HostPath is nil", v.Name)
	} else {
		// The plugin's deletion, refused or done, is one volume_delete operation.
		start := time.Now()
		if !hostPathDeletable.MatchString(path) {
			err = fmt.Errorf("host_path deleter only supports /tmp/.+ but received provided %s", path)
		} else {
			err = os.RemoveAll(path)
		}
		storagemetrics.RecordOperation(hostPathPlugin, "volume_delete", time.Since(start).Seconds(), err != nil, false)
	}
	if err != nil {
		if _, uerr := r.updateVolumePhaseWithEvent(ctx, v, corev1.VolumeFailed, corev1.EventTypeWarning, ReasonVolumeFailedDelete, err.Error()); uerr != nil {
			return uerr
		}
		return err
	}
	if slices.Contains(v.Finalizers, FinalizerInTree) {
		clone := v.DeepCopy()
		clone.Finalizers = slices.DeleteFunc(clone.Finalizers, func(f string) bool { return f == FinalizerInTree })
		if err := r.Client.Update(ctx, clone); err != nil {
			return err
		}
		v = clone
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, v, client.Preconditions{UID: &v.UID}))
}
