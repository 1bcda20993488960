package attachdetach

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The decision for one node: what its pods need (desired) against its VolumeAttachments and
// status (actual), as upstream's reconciler loop decides it for every node at once.

const (
	// maxWaitForUnmount is upstream's ReconcilerMaxWaitForUnmountDuration: how long a volume
	// no pod needs may stay mounted on an unhealthy node before it is detached anyway.
	maxWaitForUnmount = 6 * time.Minute
	// attachTimeout is how long upstream's CSI attacher waits for the external attacher to
	// report a VolumeAttachment attached before failing the attach (csiTimeout).
	attachTimeout = 2 * time.Minute
)

// wanted is one volume some pods on the node need.
type wanted struct {
	volume
	// Pods are the node's pods that need it, upstream's ScheduledPods (Event targets).
	Pods []*corev1.Pod
	// Elsewhere describes the volume's attachments to other nodes, for volumes that may be
	// attached to one node only.
	Elsewhere elsewhere
}

// elsewhere is the volume's state on other nodes.
type elsewhere struct {
	// AttachedTo are the other nodes it is attached to (VolumeAttachment attached and not
	// being deleted).
	AttachedTo []string
	// Pending: another node's VolumeAttachment exists but is not (or no longer) attached:
	// an attach or detach in flight, which upstream lets finish before attaching here.
	Pending bool
	// Pods are the pods on AttachedTo that need it, for the message.
	Pods []*corev1.Pod
}

// attachment is one of the node's VolumeAttachments, its volume known.
type attachment struct {
	// Name and UID are the VolumeAttachment's; empty for a StatusOnly volume, known from
	// the node's status alone.
	Name       string
	UID        types.UID
	StatusOnly bool
	Volume     corev1.UniqueVolumeName
	Attached   bool
	Deleting   bool
	Created    time.Time
	// AttachError is the external attacher's last error, if any.
	AttachError *storagev1.VolumeError
}

// nodeView is the node as the decision needs it.
type nodeView struct {
	Name string
	// Exists: the Node object exists. A deleted node gets no new attachments; its volumes
	// are detached as its pods go, once unmounted according to its last status (as upstream
	// keeps it), or after the maximum wait for unmount, a deleted node being unhealthy.
	Exists bool
	// Healthy: Ready is True (upstream's IsNodeReady).
	Healthy bool
	// OutOfService: the node.kubernetes.io/out-of-service taint is set: volumes are detached
	// without waiting for unmount.
	OutOfService bool
	InUse        map[corev1.UniqueVolumeName]bool
	// Attached is node.status.volumesAttached as read.
	Attached []corev1.AttachedVolume
}

// input is everything one node's decision reads.
type input struct {
	Node        nodeView
	Wanted      map[corev1.UniqueVolumeName]*wanted
	Attachments []attachment
	// DetachRequested is when each volume no pod needs was first seen so (upstream's
	// detachRequestedTime); Now the current time.
	DetachRequested map[corev1.UniqueVolumeName]time.Time
	Now             time.Time
	// DisableForceDetachOnTimeout is --disable-force-detach-on-timeout.
	DisableForceDetachOnTimeout bool
}

// detach is one VolumeAttachment to delete.
type detach struct {
	attachment
	// VerifySafe: check the node's volumesInUse live first (not a forced detach).
	VerifySafe bool
	// Forced is upstream's forced-detach reason ("timeout", "out-of-service"), or empty.
	Forced string
}

// plan is what to do for the node, in order: write Status, delete Detach, create Attach;
// then report Attached (SuccessfulAttachVolume), MultiAttach and AttachFailed Events.
type plan struct {
	// Status is the node's new status.volumesAttached; StatusChanged says whether to write it.
	Status        []corev1.AttachedVolume
	StatusChanged bool
	Detach        []detach
	Attach        []*wanted
	// Attached are volumes newly reported attached in Status.
	Attached []*wanted
	// MultiAttach are volumes attached to another node that may not be attached to two.
	MultiAttach []*wanted
	// AttachFailed are the node's attachments the external attacher failed, or that have
	// waited longer than upstream's attach timeout, with the volume they are for.
	AttachFailed []failedAttach
	// DetachRequested is the new detach request times.
	DetachRequested map[corev1.UniqueVolumeName]time.Time
	// RequeueAfter is when the decision may change without any object changing (a force
	// detach deadline, an attach timeout); zero: never.
	RequeueAfter time.Duration
}

// failedAttach is an attachment that failed and the volume it was for.
type failedAttach struct {
	*wanted
	Attachment attachment
	// Message is upstream's error text after "AttachVolume.Attach failed for volume ...: ".
	Message string
}

// decide compares the node's wanted volumes with its attachments.
//
// Attach: a wanted iSCSI or Fibre Channel volume is reported at once (their plugins attach
// from the node); a wanted volume without a VolumeAttachment gets one, unless it may be attached to
// one node only and another node has it (attached: a multi-attach error is reported; pending:
// wait). Reported: a volume is listed in node.status.volumesAttached once its
// VolumeAttachment is attached and while it is not being detached. Detach: a volume no pod
// needs is detached (its VolumeAttachment deleted, after it leaves the node status) once the
// node no longer lists it in volumesInUse, or at once on an out-of-service node, or after
// upstream's maximum wait for unmount on an unhealthy node (unless that is disabled).
func decide(in input) plan {
	p := plan{DetachRequested: map[corev1.UniqueVolumeName]time.Time{}}
	byVolume := map[corev1.UniqueVolumeName]attachment{}
	for _, a := range in.Attachments {
		byVolume[a.Volume] = a
	}
	detaching := map[corev1.UniqueVolumeName]bool{}

	// Detach what no pod needs.
	for _, a := range in.Attachments {
		if _, ok := in.Wanted[a.Volume]; ok || a.Deleting {
			continue
		}
		since, ok := in.DetachRequested[a.Volume]
		if !ok {
			since = in.Now
		}
		p.DetachRequested[a.Volume] = since
		elapsed := in.Now.Sub(since)
		timeoutExpired := elapsed > maxWaitForUnmount && !in.DisableForceDetachOnTimeout
		force := !in.Node.Healthy && timeoutExpired
		if in.Node.InUse[a.Volume] && !force && !in.Node.OutOfService {
			if !in.DisableForceDetachOnTimeout && !in.Node.Healthy {
				p.requeue(maxWaitForUnmount - elapsed + time.Second)
			}
			continue
		}
		d := detach{attachment: a, VerifySafe: !timeoutExpired && !in.Node.OutOfService}
		switch {
		case timeoutExpired:
			d.Forced = forcedTimeout
		case in.Node.OutOfService:
			d.Forced = forcedOutOfService
		}
		detaching[a.Volume] = true
		p.Detach = append(p.Detach, d)
	}

	// Attach what pods need.
	for _, name := range sortedNames(in.Wanted) {
		w := in.Wanted[name]
		if w.StatusOnly {
			// Attached by being reported, below.
			continue
		}
		a, ok := byVolume[name]
		switch {
		case ok && a.Attached && !a.Deleting:
		case ok && !a.Deleting:
			if f, ok := attachFailure(w, a, in.Now); ok {
				p.AttachFailed = append(p.AttachFailed, f)
			} else if wait := a.Created.Add(attachTimeout).Sub(in.Now); wait > 0 {
				p.requeue(wait + time.Second)
			}
		case ok:
			// Being detached: attached again once the VolumeAttachment is gone.
		case !in.Node.Exists:
		case !w.MultiAttach && len(w.Elsewhere.AttachedTo) > 0:
			p.MultiAttach = append(p.MultiAttach, w)
		case !w.MultiAttach && w.Elsewhere.Pending:
		default:
			p.Attach = append(p.Attach, w)
		}
	}

	// Report what is attached and not being detached; keep other plugins' entries.
	reported := map[corev1.UniqueVolumeName]bool{}
	for _, av := range in.Node.Attached {
		reported[av.Name] = true
		if !isCSI(av.Name) && !isStatusOnly(av.Name) {
			p.Status = append(p.Status, av)
		}
	}
	for _, a := range in.Attachments {
		if !a.Attached || a.Deleting || detaching[a.Volume] {
			continue
		}
		if _, ok := in.Wanted[a.Volume]; !ok && !reported[a.Volume] {
			// Attached for no pod: never newly reported (it is on its way out).
			continue
		}
		p.Status = append(p.Status, corev1.AttachedVolume{Name: a.Volume})
		if w, ok := in.Wanted[a.Volume]; ok && !reported[a.Volume] {
			p.Attached = append(p.Attached, w)
		}
	}
	for _, name := range sortedNames(in.Wanted) {
		if w := in.Wanted[name]; w.StatusOnly && in.Node.Exists && !reported[name] {
			p.Status = append(p.Status, corev1.AttachedVolume{Name: name})
			p.Attached = append(p.Attached, w)
		}
	}
	sort.Slice(p.Status, func(i, j int) bool { return p.Status[i].Name < p.Status[j].Name })
	p.StatusChanged = in.Node.Exists && !sameAttached(in.Node.Attached, p.Status)
	return p
}

// attachFailure is upstream's failed attach of a VolumeAttachment that is not attached: the
// external attacher's error, or no answer within the attach timeout.
func attachFailure(w *wanted, a attachment, now time.Time) (failedAttach, bool) {
	if a.AttachError != nil {
		return failedAttach{wanted: w, Attachment: a, Message: a.AttachError.Message}, true
	}
	if now.Sub(a.Created) >= attachTimeout {
		return failedAttach{wanted: w, Attachment: a, Message: "timed out waiting for external-attacher of " +
			w.Driver + " CSI driver to attach volume " + w.Handle}, true
	}
	return failedAttach{}, false
}

func (p *plan) requeue(after time.Duration) {
	if after <= 0 {
		after = time.Second
	}
	if p.RequeueAfter == 0 || after < p.RequeueAfter {
		p.RequeueAfter = after
	}
}

func isCSI(name corev1.UniqueVolumeName) bool {
	return strings.HasPrefix(string(name), csiPluginName+"/")
}

// sameAttached compares two volumesAttached lists as sets.
func sameAttached(a, b []corev1.AttachedVolume) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func sortedNames(m map[corev1.UniqueVolumeName]*wanted) []corev1.UniqueVolumeName {
	names := make([]corev1.UniqueVolumeName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Upstream's forced-detach reasons, the label of its forced detaches counter.
const (
	forcedTimeout      = "timeout"
	forcedOutOfService = "out-of-service"
)

// multiAttachMessage is upstream's FailedAttachVolume message for a volume that may be
// attached to one node only and is attached elsewhere, as seen by pod: the pods using it
// there, named when in pod's namespace and counted otherwise.
func multiAttachMessage(w *wanted, pod *corev1.Pod) string {
	prefix := "Waiting for detach for volume \"" + w.SpecName + "\" "
	if len(w.Elsewhere.Pods) == 0 {
		return prefix + "Volume is already exclusively attached to one node, waiting on detach before it can be attached to another node"
	}
	var local []string
	others := 0
	for _, o := range w.Elsewhere.Pods {
		if o.Namespace == pod.Namespace {
			local = append(local, o.Name)
		} else {
			others++
		}
	}
	var msg string
	if len(local) > 0 {
		msg = "Volume is already used by pod(s) " + strings.Join(local, ", ")
		if others > 0 {
			msg += " and " + strconv.Itoa(others) + " pod(s) in different namespaces"
		}
	} else {
		msg = "Volume is already used by " + strconv.Itoa(others) + " pod(s) in different namespaces"
	}
	return prefix + msg
}
