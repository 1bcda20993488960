package pvbinder

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// claimReconciler syncs one claim: upstream's syncClaim, as observe, decideClaim
// (decide.go), apply.
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
	in, err := r.observe(ctx, claim)
	if err != nil {
		return r.done(ctx, err)
	}
	return r.done(ctx, r.apply(ctx, claim, decideClaim(in)))
}

// observe reads what the claim's decision needs: the volume a bound or pre-bound claim
// names; for any other claim its class, the best matching volume and, only when none
// matches, the default class and the pods waiting for the scheduler.
func (r *claimReconciler) observe(ctx context.Context, claim *corev1.PersistentVolumeClaim) (claimInput, error) {
	in := claimInput{Claim: claim, DynamicProvisioning: r.DynamicProvisioning}
	if metav1.HasAnnotation(claim.ObjectMeta, AnnBindCompleted) || claim.Spec.VolumeName != "" {
		if claim.Spec.VolumeName == "" {
			return in, nil
		}
		v := &corev1.PersistentVolume{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: claim.Spec.VolumeName}, v); err != nil {
			return in, client.IgnoreNotFound(err)
		}
		in.Volume = v
		return in, nil
	}

	class, err := r.classOf(ctx, claim)
	if err != nil {
		return in, err
	}
	if in.DelayBinding, err = waitsForFirstConsumer(class); err != nil {
		return in, err
	}
	in.Class = class
	var node *corev1.Node
	if name, ok := claim.Annotations[AnnSelectedNode]; ok && in.DelayBinding {
		node = r.selectedNode(ctx, name)
	}
	volumes, err := r.listVolumes(ctx)
	if err != nil {
		return in, err
	}
	match, err := FindBestMatch(claim, volumes, in.DelayBinding, node)
	if match != nil || err != nil {
		// The volumes were read without a copy: the match is copied.
		in.MatchErr = err
		if match != nil {
			in.Match = match.DeepCopy()
		}
		return in, nil
	}
	if !storagehelpers.PersistentVolumeClaimHasClass(claim) {
		list := &storagev1.StorageClassList{}
		if in.DefaultClassErr = r.Client.List(ctx, list); in.DefaultClassErr == nil {
			in.DefaultClass = DefaultClass(list.Items)
		}
		if in.DefaultClass != nil || in.DefaultClassErr != nil {
			return in, nil
		}
	}
	if in.DelayBinding && !storagehelpers.IsDelayBindingProvisioning(claim) {
		in.Waiting, err = r.waitingPods(ctx, claim)
	}
	return in, err
}

// apply carries out the claim's plan; the claim is written by writeClaim only.
func (r *claimReconciler) apply(ctx context.Context, claim *corev1.PersistentVolumeClaim, p claimPlan) error {
	if p.Migrate != nil {
		var err error
		if claim, err = r.writeClaim(ctx, claim, claimWrite{Edit: p.Migrate}); err != nil {
			return fmt.Errorf("updating migration annotations of claim: %w", err)
		}
		if p.Bind != nil {
			// The volume's claimRef names the claim as written: its new resourceVersion.
			p.Bind = bind(p.Bind.Volume, claim)
		}
	}
	r.record(claim, p.Events...)
	switch {
	case p.Err != nil:
		return p.Err
	case p.Bind != nil:
		err := r.bind(ctx, claim, p.Bind)
		if p.EndsProvision {
			// A bound claim ends its provision, if it had one; a failed bind counts an error.
			r.operations.record(claimKey(claim), err)
		}
		return err
	case p.AssignClass != nil || p.AssignErr != nil:
		// An assigned class brings the claim back with its update.
		err := p.AssignErr
		if err == nil {
			if _, err = r.writeClaim(ctx, claim, claimWrite{Edit: p.AssignClass}); err != nil {
				err = fmt.Errorf("can't update PersistentVolumeClaim[%q]: %w", claimKey(claim), err)
			} else {
				log.FromContext(ctx).V(4).Info("Assigned the default StorageClass to the claim", "storageClass", *p.AssignClass.Spec.StorageClassName)
			}
		}
		recordRetroactiveClass(err)
		return err
	case p.Provision != nil:
		return r.provision(ctx, claim, p.Provision)
	}
	_, err := r.writeClaim(ctx, claim, claimWrite{Phase: p.Phase, Event: p.PhaseEvent})
	return err
}

// bind saves the binding in upstream's order, each write from the result of the one before:
// the volume's claimRef and phase Bound, then the claim's volumeName, annotations and phase
// Bound. A failure stops it; the next sync of either object finishes the binding.
func (r *claimReconciler) bind(ctx context.Context, claim *corev1.PersistentVolumeClaim, b *binding) error {
	if b.Err != nil {
		return fmt.Errorf("binding volume %s to claim %s/%s: %w", b.Volume.Name, claim.Namespace, claim.Name, b.Err)
	}
	v, err := r.writeVolume(ctx, b.Volume, volumeWrite{Edit: b.VolumeEdit, Phase: corev1.VolumeBound})
	if err != nil {
		return fmt.Errorf("binding volume %s to claim %s/%s: %w", b.Volume.Name, claim.Namespace, claim.Name, err)
	}
	if _, err := r.writeClaim(ctx, claim, claimWrite{Edit: b.ClaimEdit, Phase: corev1.ClaimBound, Volume: v}); err != nil {
		return fmt.Errorf("binding claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, v.Name, err)
	}
	return nil
}

// provision hands the claim to its provisioner: the provision is timed (until the claim is
// bound) and the claim names the provisioner; ExternalProvisioning says what it waits for.
func (r *claimReconciler) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim, p *provisioning) error {
	key := claimKey(claim)
	r.operations.start(key, p.Plugin, "provision")
	named, err := r.writeClaim(ctx, claim, claimWrite{Edit: p.Edit})
	switch {
	case err != nil && p.Refused != nil:
		r.operations.record(key, err)
		return err
	case p.Refused != nil:
		r.operations.record(key, p.Refused)
		r.record(named, warning(ReasonProvisioningFailed, "Provisioning", p.Refused.Error()))
		return nil
	case err != nil:
		r.record(claim, warning(ReasonProvisioningFailed, "Provisioning", "Error saving claim: %v", err))
		r.operations.record(key, err)
		return err
	}
	r.record(named, normal(ReasonExternalProvisioning, "Provisioning",
		"Waiting for a volume to be created either by the external provisioner '%s' "+
			"or manually by the system administrator. If volume creation is delayed, please verify that "+
			"the provisioner is running and correctly registered.", p.Plugin))
	return nil
}

// claimWrite is one write of a claim: Edit's annotations and spec, then the status for
// Phase with the volume it is bound to (none: nil). With an Event the status is written
// only when the phase changes, and the Event reports that change.
type claimWrite struct {
	Edit   *corev1.PersistentVolumeClaim
	Phase  corev1.PersistentVolumeClaimPhase
	Volume *corev1.PersistentVolume
	Event  *notice
}

// writeClaim is the one place a claim is written: by update, as upstream (the binder's
// role grants update, not patch), each write from the claim as last written; unchanged
// status is not written.
func (b *Binder) writeClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, w claimWrite) (*corev1.PersistentVolumeClaim, error) {
	if w.Edit != nil {
		clone, edit := claim.DeepCopy(), w.Edit.DeepCopy()
		clone.Annotations, clone.Spec = edit.Annotations, edit.Spec
		if err := b.Client.Update(ctx, clone); err != nil {
			return claim, err
		}
		log.FromContext(ctx).V(4).Info("Updated the claim", "volume", clone.Spec.VolumeName)
		claim = clone
	}
	if w.Phase == "" || (w.Event != nil && claim.Status.Phase == w.Phase) {
		return claim, nil
	}
	status, err := claimStatus(claim, w.Phase, w.Volume)
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
	log.FromContext(ctx).V(2).Info("Claim entered phase", "phase", w.Phase)
	if w.Event != nil {
		b.record(clone, *w.Event)
	}
	return clone, nil
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

// waitingPods are the unscheduled pods that use the claim, by name.
func (r *claimReconciler) waitingPods(ctx context.Context, claim *corev1.PersistentVolumeClaim) ([]string, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(claim.Namespace), client.MatchingFields{index.PodClaimName: claim.Name}); err != nil {
		return nil, err
	}
	var waiting []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" && !podTerminated(p) {
			waiting = append(waiting, p.Name)
		}
	}
	return waiting, nil
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
