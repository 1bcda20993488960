package pvbinder

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// The decisions of the binder: pure functions of a claim or a volume and what its
// reconciler observed, each returning the plan the reconciler carries out (claim.go,
// volume.go). Every object a plan holds is a copy: the writers put its annotations,
// finalizers and spec on the object as last written.

// notice is an Event to record, with upstream's reason, action and wording (Format is
// passed to the recorder as upstream passes it, Args with it).
type notice struct {
	Type, Reason, Action, Format string
	Args                         []any
}

func normal(reason, action, format string, args ...any) notice {
	return notice{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Format: format, Args: args}
}

func warning(reason, action, format string, args ...any) notice {
	return notice{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Format: format, Args: args}
}

// claimInput is what the claim reconciler observed about one claim.
type claimInput struct {
	Claim *corev1.PersistentVolumeClaim
	// Volume is the volume the claim's spec.volumeName names; nil when it does not exist
	// (or the claim names none).
	Volume *corev1.PersistentVolume

	// For a claim that names no volume and was never bound:
	// Class is its StorageClass, nil when it has none or the class does not exist;
	// DelayBinding: the class binds WaitForFirstConsumer.
	Class        *storagev1.StorageClass
	DelayBinding bool
	// Match is the best Available volume for it (FindBestMatch), MatchErr why none could be
	// searched (an invalid selector).
	Match    *corev1.PersistentVolume
	MatchErr error
	// DefaultClass is the default StorageClass for a claim whose class is unset (nil), read
	// only when nothing matched; DefaultClassErr a failure to list the classes.
	DefaultClass    *storagev1.StorageClass
	DefaultClassErr error
	// Waiting are the unscheduled pods using a WaitForFirstConsumer claim, by name.
	Waiting []string
	// DynamicProvisioning is --enable-dynamic-provisioning.
	DynamicProvisioning bool
}

// claimPlan is what to do about a claim, in order: write Migrate, record Events, then
// one of fail (Err), Bind, assign the default class, Provision, or write Phase.
type claimPlan struct {
	// Migrate is the claim with its migrated-to annotation fixed, written first.
	Migrate *corev1.PersistentVolumeClaim
	// Events are recorded on the claim before anything else is done.
	Events []notice
	// Err fails the sync (after Events).
	Err error
	// Bind binds the claim to a volume; EndsProvision: the bind ends the claim's timed
	// provision, if any (a failed bind counts an error).
	Bind          *binding
	EndsProvision bool
	// AssignClass is the claim with the default StorageClass; AssignErr says why it could
	// not be known. Either way the attempt is counted and the sync ends (the claim's update
	// brings it back).
	AssignClass *corev1.PersistentVolumeClaim
	AssignErr   error
	// Provision hands the claim to an external provisioner.
	Provision *provisioning
	// Phase is the claim's new phase, without a volume; PhaseEvent, if set, is recorded
	// only when the phase changes, and the phase is then the only thing compared.
	Phase      corev1.PersistentVolumeClaimPhase
	PhaseEvent *notice
}

// binding is a claim and a volume bound to each other, written in upstream's order: the
// volume's claimRef (VolumeEdit), its phase Bound, the claim's volumeName and annotations
// (ClaimEdit), its phase Bound. An edit is nil when the object already has it.
type binding struct {
	Volume     *corev1.PersistentVolume
	VolumeEdit *corev1.PersistentVolume
	ClaimEdit  *corev1.PersistentVolumeClaim
	// Err: the volume cannot point at the claim.
	Err error
}

// provisioning is a claim handed to its class's provisioner: the provision is timed for
// Plugin, the storage-provisioner annotations name it (Edit, nil when they already do) and
// the claim waits for the volume (ExternalProvisioning). Refused: the in-tree plugin was
// found, timed and named on the claim and then refused (upstream's hostPath provisioner,
// disabled): an operation error and ProvisioningFailed.
type provisioning struct {
	Plugin  string
	Edit    *corev1.PersistentVolumeClaim
	Refused error
}

// decideClaim is upstream's syncClaim: a claim marked bind-completed is kept bound (or
// Lost), one naming a volume is bound to it when it fits, any other is bound to the best
// match, given the default class, left to the scheduler, or handed to a provisioner.
func decideClaim(in claimInput) claimPlan {
	var p claimPlan
	claim := in.Claim
	if ann, changed := migrationAnnotations(claim.Annotations, true); changed {
		claim = claim.DeepCopy()
		claim.Annotations = ann
		p.Migrate = claim
	}
	switch {
	case metav1.HasAnnotation(claim.ObjectMeta, AnnBindCompleted):
		decideBoundClaim(&p, claim, in.Volume)
	case claim.Spec.VolumeName != "":
		decidePreBoundClaim(&p, claim, in.Volume)
	default:
		decideUnboundClaim(&p, claim, in)
	}
	return p
}

// decideBoundClaim keeps a claim that was bound: Lost when its volume is gone or taken by
// another claim, the binding repaired otherwise.
func decideBoundClaim(p *claimPlan, claim *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
	lost := func(reason, note string) {
		n := warning(reason, "Binding", note)
		p.Phase, p.PhaseEvent = corev1.ClaimLost, &n
	}
	switch {
	case claim.Spec.VolumeName == "":
		lost(ReasonClaimLost, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	case v == nil:
		lost(ReasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	case v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID == claim.UID:
		// Unbound volume (or a cache not showing the binding yet): bind again; bound: a no-op
		// unless a phase or annotation is missing.
		p.Bind = bind(v, claim)
	default:
		lost(ReasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
	}
}

// decidePreBoundClaim binds a claim to the volume its spec.volumeName names, when that
// volume exists, fits and is not someone else's; else the claim stays Pending.
func decidePreBoundClaim(p *claimPlan, claim *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
	switch {
	case v == nil:
		// The volume may be created later.
	case v.Spec.ClaimRef == nil:
		if err := CheckVolumeSatisfiesClaim(v, claim); err != nil {
			p.Events = append(p.Events, warning(ReasonVolumeMismatch, "Binding", "Cannot bind to requested volume %q: %s", v.Name, err))
			break
		}
		p.Bind = bind(v, claim)
		return
	case storagehelpers.IsVolumeBoundToClaim(v, claim):
		// The volume names the claim too: finish the binding (the claimRef gets the UID).
		p.Bind = bind(v, claim)
		return
	default:
		p.Events = append(p.Events, warning(ReasonFailedBinding, "Binding", "volume %q already bound to a different claim.", v.Name))
		if metav1.HasAnnotation(claim.ObjectMeta, AnnBoundByController) {
			// Someone removed bind-completed from a claim the controller bound.
			p.Err = fmt.Errorf("invalid binding of claim %q to volume %q: volume already claimed by %q",
				claim.Namespace+"/"+claim.Name, v.Name, v.Spec.ClaimRef.Namespace+"/"+v.Spec.ClaimRef.Name)
			return
		}
	}
	p.Phase = corev1.ClaimPending
}

// decideUnboundClaim binds a claim that names no volume to the best match, or else assigns
// the default class, waits for the scheduler, or asks for provisioning.
func decideUnboundClaim(p *claimPlan, claim *corev1.PersistentVolumeClaim, in claimInput) {
	switch {
	case in.MatchErr != nil:
		p.Err = fmt.Errorf("error finding PV for claim %q: %w", claim.Namespace+"/"+claim.Name, in.MatchErr)
		return
	case in.Match != nil:
		p.Bind, p.EndsProvision = bind(in.Match, claim), true
		return
	case !storagehelpers.PersistentVolumeClaimHasClass(claim) && (in.DefaultClass != nil || in.DefaultClassErr != nil):
		if p.AssignErr = in.DefaultClassErr; p.AssignErr == nil {
			p.AssignClass = claim.DeepCopy()
			p.AssignClass.Spec.StorageClassName = &in.DefaultClass.Name
		}
		return
	case in.DelayBinding && !storagehelpers.IsDelayBindingProvisioning(claim):
		p.Events = append(p.Events, waitingFor(in.Waiting))
	case storagehelpers.GetPersistentVolumeClaimClass(claim) != "":
		// The provisioner (or the administrator) creates a volume; its event brings the
		// claim back. The claim's phase is left as it is.
		p.Events, p.Provision = decideProvision(claim, in.Class, in.DynamicProvisioning)
		return
	default:
		p.Events = append(p.Events, normal(ReasonFailedBinding, "Binding",
			"no persistent volumes available for this claim and no storage class is set"))
	}
	p.Phase = corev1.ClaimPending
}

// waitingFor reports a claim whose binding waits for the scheduler: for its unscheduled
// pods by name, or for a first pod to use it.
func waitingFor(pods []string) notice {
	switch len(pods) {
	case 0:
		return normal(ReasonWaitForFirstConsumer, "Binding", "waiting for first consumer to be created before binding")
	case 1:
		return normal(ReasonWaitForPodScheduled, "Binding", "waiting for pod %s to be scheduled", pods[0])
	default:
		return normal(ReasonWaitForPodScheduled, "Binding", "waiting for pods %s to be scheduled", strings.Join(pods, ","))
	}
}

// decideProvision hands the claim to its class's provisioner, on every sync as upstream;
// kcm provisions nothing itself. A missing class or an in-tree provisioner without a plugin
// is reported (ProvisioningFailed) and nothing else done.
func decideProvision(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, enabled bool) ([]notice, *provisioning) {
	if !enabled {
		return nil, nil
	}
	if class == nil {
		// Worded as upstream's lister reports it (singular resource).
		err := apierrors.NewNotFound(schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclass"}, storagehelpers.GetPersistentVolumeClaimClass(claim))
		return []notice{warning(ReasonProvisioningFailed, "Provisioning", err.Error())}, nil
	}
	provisioner, err := provisionerFor(class)
	if class.Provisioner == hostPathPlugin {
		// Upstream finds the plugin, times the provision and names the plugin on the claim
		// before it refuses: an error of the plugin's provision.
		return nil, &provisioning{Plugin: hostPathPlugin, Edit: namingProvisioner(claim, hostPathPlugin), Refused: err}
	}
	if err != nil {
		return []notice{warning(ReasonProvisioningFailed, "Provisioning", err.Error())}, nil
	}
	return nil, &provisioning{Plugin: provisioner, Edit: namingProvisioner(claim, provisioner)}
}

// namingProvisioner is the claim with both storage-provisioner annotations naming the
// provisioner (and its migrated-to annotation in line), nil when they already do.
func namingProvisioner(claim *corev1.PersistentVolumeClaim, provisioner string) *corev1.PersistentVolumeClaim {
	if claim.Annotations[AnnStorageProvisioner] == provisioner {
		return nil
	}
	edit := claim.DeepCopy()
	if edit.Annotations == nil {
		edit.Annotations = map[string]string{}
	}
	edit.Annotations[AnnBetaStorageProvisioner] = provisioner
	edit.Annotations[AnnStorageProvisioner] = provisioner
	edit.Annotations, _ = migrationAnnotations(edit.Annotations, true)
	return edit
}

// bind is the binding of a claim and a volume: the volume's claimRef points at the claim
// (UID included), bound-by-controller unless the user pre-bound it to this claim
// (upstream's GetBindVolumeToClaim); the claim's volumeName names the volume,
// bound-by-controller when the controller chose it, and bind-completed is set.
func bind(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) *binding {
	b := &binding{Volume: v}
	edit, dirty, err := storagehelpers.GetBindVolumeToClaim(v, claim)
	if err != nil {
		b.Err = err
		return b
	}
	if dirty {
		b.VolumeEdit = edit
	}
	c := claim.DeepCopy()
	dirty = false
	if claim.Spec.VolumeName != v.Name {
		c.Spec.VolumeName = v.Name
		if !metav1.HasAnnotation(c.ObjectMeta, AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, AnnBoundByController, "yes")
		}
		dirty = true
	}
	if !metav1.HasAnnotation(c.ObjectMeta, AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, AnnBindCompleted, "yes")
		dirty = true
	}
	if dirty {
		b.ClaimEdit = c
	}
	return b
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

// volumeInput is what the volume reconciler observed about one volume.
type volumeInput struct {
	Volume *corev1.PersistentVolume
	// Claim is the claim the volume's claimRef names by UID; nil when it is gone (or was
	// re-created), or the claimRef has no UID.
	Claim *corev1.PersistentVolumeClaim
}

// volumePlan is what to do about a volume, in order: write Anneal, record Events (and
// ClaimEvents on the claim), then Unbind, or write Phase and carry out Reclaim.
type volumePlan struct {
	// Anneal is the volume with its migrated-to annotation and deletion finalizers fixed.
	Anneal      *corev1.PersistentVolume
	Events      []notice
	ClaimEvents []notice
	// Unbind is the volume without its binding; it is then Available again.
	Unbind *corev1.PersistentVolume
	// Phase is the volume's new phase ("": as it is).
	Phase corev1.PersistentVolumePhase
	// Reclaim is the reclaim policy to apply to the released volume.
	Reclaim *reclaim
}

// reclaim is how a released volume is reclaimed: Recycle, Delete (by Deleter, "" for an
// external deleter, or failing with DeleterErr; Unprotect is the volume without the in-tree
// deletion finalizer, nil when it has none) or Fail (an unknown policy).
type reclaim struct {
	Recycle    bool
	Delete     bool
	Deleter    string
	DeleterErr error
	Unprotect  *corev1.PersistentVolume
	Fail       *failure
}

// failure is a volume's move to Failed: its status message, and the Event reporting it.
type failure struct {
	Message string
	Event   notice
}

// failed is the failure upstream reports with reason and message: the status message and
// the Event's note (passed as the recorder's format, as upstream).
func failed(reason, message string) *failure {
	return &failure{Message: message, Event: warning(reason, "Reclaiming", message)}
}

// decideVolume is upstream's syncVolume: an unclaimed volume is Available, a claimed one
// Bound; a volume whose claim is gone (or that was provisioned for a claim bound elsewhere)
// is Released and reclaimed; a binding the claim does not share is undone.
func decideVolume(in volumeInput) volumePlan {
	var p volumePlan
	v := in.Volume
	ann, annChanged := migrationAnnotations(v.Annotations, false)
	finalizers, finChanged := deletionFinalizers(v)
	if annChanged || finChanged {
		v = v.DeepCopy()
		v.Annotations, v.Finalizers = ann, finalizers
		p.Anneal = v
	}
	if v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID == "" {
		// Unused, or pre-bound to a claim by name that the claim's sync binds.
		p.Phase = corev1.VolumeAvailable
		return p
	}
	claim := in.Claim
	release := func() {
		// A Failed volume stays Failed while the reclaim is retried, for the user to see.
		if v.Status.Phase != corev1.VolumeReleased && v.Status.Phase != corev1.VolumeFailed {
			p.Phase = corev1.VolumeReleased
		}
		p.Reclaim = decideReclaim(v)
	}
	switch {
	case claim == nil:
		release()
	case claim.Spec.VolumeName == "":
		if storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &v.Spec) {
			// The claim's sync will never pick this volume.
			p.Events = append(p.Events, warning(ReasonVolumeMismatch, "Binding",
				"Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name))
			p.ClaimEvents = append(p.ClaimEvents, warning(ReasonVolumeMismatch, "Binding",
				"Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", v.Name))
		}
		// The claim's sync (this volume's event queued it) finishes the binding.
	case claim.Spec.VolumeName == v.Name:
		p.Phase = corev1.VolumeBound
	case metav1.HasAnnotation(v.ObjectMeta, AnnDynamicallyProvisioned) && v.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that got bound elsewhere: not needed any more.
		release()
	default:
		// The claim is bound to another volume: undo the controller's binding, or keep the
		// user's pre-binding without the UID.
		p.Unbind = unbound(v)
	}
	return p
}

// decideReclaim applies the reclaim policy of a released volume: Retain keeps it; Delete
// leaves it to the external provisioner that made it (or to the plugin of an in-tree
// volume, which kcm has only for hostPath); Recycle, deprecated, scrubs an NFS or hostPath
// volume with a recycler pod. The CSI driver's provisioner reclaims migrated volumes.
func decideReclaim(v *corev1.PersistentVolume) *reclaim {
	if v.Annotations[AnnMigratedTo] != "" {
		return nil
	}
	switch v.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		return nil
	case corev1.PersistentVolumeReclaimRecycle:
		return &reclaim{Recycle: true}
	case corev1.PersistentVolumeReclaimDelete:
		rc := &reclaim{Delete: true}
		rc.Deleter, rc.DeleterErr = deleter(v)
		if slices.Contains(v.Finalizers, FinalizerInTree) {
			rc.Unprotect = v.DeepCopy()
			rc.Unprotect.Finalizers = slices.DeleteFunc(rc.Unprotect.Finalizers, func(f string) bool { return f == FinalizerInTree })
		}
		return rc
	default:
		return &reclaim{Fail: failed(ReasonUnknownReclaimPolicy, "Volume has unrecognized PersistentVolumeReclaimPolicy")}
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

// unbound is the volume with its binding undone: a volume the controller bound loses its
// claimRef, one the user pre-bound keeps it without the UID.
func unbound(v *corev1.PersistentVolume) *corev1.PersistentVolume {
	u := v.DeepCopy()
	if metav1.HasAnnotation(v.ObjectMeta, AnnBoundByController) {
		u.Spec.ClaimRef = nil
		delete(u.Annotations, AnnBoundByController)
		if len(u.Annotations) == 0 {
			u.Annotations = nil
		}
	} else {
		u.Spec.ClaimRef.UID = ""
	}
	return u
}

// recycleStart is how a recycle not yet started begins: not at all while running pods use
// the volume (Used reports them), Failed when the volume's source has no recycler plugin,
// else with the recycler Pod.
type recycleStart struct {
	Used *notice
	Fail *failure
	Pod  *corev1.Pod
}

// decideRecycle starts the recycle of a released volume, as the API server has it, given
// the running pods (namespace/name) that use the claim it names and whether a claim of that
// name exists (then it is a new claim, bound elsewhere, and its pods do not use this
// volume).
func decideRecycle(v *corev1.PersistentVolume, pods []string, claimExists bool, rs *Recyclers) recycleStart {
	if len(pods) > 0 && !claimExists {
		n := normal(ReasonVolumeFailedRecycle, "Recycling", "Volume is used by pods: %s", strings.Join(pods, ","))
		return recycleStart{Used: &n}
	}
	if pod := rs.recyclerPod(v); pod != nil {
		return recycleStart{Pod: pod}
	}
	return recycleStart{Fail: failed(ReasonVolumeFailedRecycle, "No recycler plugin found for the volume!")}
}
