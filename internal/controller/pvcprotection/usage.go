package pvcprotection

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kcm/kcm/internal/pod"
)

// Finalizer keeps a claim in the API while a pod uses it.
const Finalizer = "kubernetes.io/pvc-protection"

// The Unused condition's reasons and messages, as upstream.
const (
	ReasonPodUsingPVC     = "PodUsingPVC"
	MessagePodUsingPVC    = "A pod is currently referencing this PVC"
	ReasonNoPodsUsingPVC  = "NoPodsUsingPVC"
	MessageNoPodsUsingPVC = "No pods are currently referencing this PVC"
)

// usage decides whether one pod uses one claim.
type usage func(p *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool

// NeedsFinalizer reports whether a live claim lacks the finalizer. The admission plugin adds
// it on create; this catches claims created while it was off.
func NeedsFinalizer(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(pvc, Finalizer)
}

// IsDeletionCandidate reports whether the claim is being deleted and waits for this
// controller's finalizer.
func IsDeletionCandidate(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(pvc, Finalizer)
}

// UsedForDeletion is upstream's rule for keeping a deleted claim: only scheduled pods count
// (the scheduler and kubelet refuse to start a pod on a claim being deleted), a direct
// reference counts whatever the pod's phase, as long as the pod object exists, and an
// ephemeral volume counts when the claim is the pod's own and the pod is not shut down.
func UsedForDeletion(p *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if p.Spec.NodeName == "" {
		return false
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			return true
		}
		if v.Ephemeral != nil && !IsShutDown(p) && ephemeral.VolumeClaimName(p, v) == pvc.Name && ephemeral.VolumeIsForPod(p, pvc) == nil {
			return true
		}
	}
	return false
}

// UsedForUnused is upstream's rule for the Unused condition: any pod that has not
// terminated and references the claim, scheduled or not.
func UsedForUnused(p *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if IsTerminated(p) {
		return false
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name ||
			v.Ephemeral != nil && ephemeral.VolumeClaimName(p, v) == pvc.Name && ephemeral.VolumeIsForPod(p, pvc) == nil {
			return true
		}
	}
	return false
}

// IsShutDown reports whether the kubelet is done with the pod or it was force-deleted: a
// deletionTimestamp with a zero grace period. Such a pod only waits for garbage collection,
// possibly behind a finalizer that itself waits for the claim, so it must not hold the claim.
func IsShutDown(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
}

// IsTerminated is upstream's volume util IsPodTerminated: the pod finished, or it is being
// deleted and none of its containers runs.
func IsTerminated(p *corev1.Pod) bool {
	return pod.IsTerminal(p) || p.DeletionTimestamp != nil &&
		notRunning(p.Status.InitContainerStatuses) && notRunning(p.Status.ContainerStatuses) && notRunning(p.Status.EphemeralContainerStatuses)
}

func notRunning(statuses []corev1.ContainerStatus) bool {
	for _, s := range statuses {
		if s.State.Terminated == nil && s.State.Waiting == nil {
			return false
		}
	}
	return true
}

// TracksUnused reports whether the claim gets the Unused condition: bound and not being
// deleted, as upstream (so as not to race the binder).
func TracksUnused(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.DeletionTimestamp == nil && pvc.Status.Phase == corev1.ClaimBound
}

// UnusedCondition returns the Unused condition the claim should get given whether a pod
// uses it, or nil when its current condition already says so.
func UnusedCondition(pvc *corev1.PersistentVolumeClaim, used bool, now metav1.Time) *corev1.PersistentVolumeClaimCondition {
	cur := findUnused(pvc)
	switch {
	case used && (cur == nil || cur.Status == corev1.ConditionTrue):
		return &corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimUnused, Status: corev1.ConditionFalse,
			LastTransitionTime: now, Reason: ReasonPodUsingPVC, Message: MessagePodUsingPVC}
	case !used && (cur == nil || cur.Status != corev1.ConditionTrue):
		return &corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimUnused, Status: corev1.ConditionTrue,
			LastTransitionTime: now, Reason: ReasonNoPodsUsingPVC, Message: MessageNoPodsUsingPVC}
	}
	return nil
}

func findUnused(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaimCondition {
	for i := range pvc.Status.Conditions {
		if pvc.Status.Conditions[i].Type == corev1.PersistentVolumeClaimUnused {
			return &pvc.Status.Conditions[i]
		}
	}
	return nil
}

// setCondition replaces the claim's condition of the same type, or appends it.
func setCondition(pvc *corev1.PersistentVolumeClaim, c corev1.PersistentVolumeClaimCondition) {
	if cur := findUnused(pvc); cur != nil {
		*cur = c
		return
	}
	pvc.Status.Conditions = append(pvc.Status.Conditions, c)
}

// usageFacts are the parts of a pod that the usage rules read; a pod update that changes
// none of them cannot change whether a claim is used.
type usageFacts struct {
	uid        string
	nodeName   string
	terminated bool
	deleting   bool
	shutDown   bool
}

func factsOf(p *corev1.Pod) usageFacts {
	return usageFacts{string(p.UID), p.Spec.NodeName, IsTerminated(p), p.DeletionTimestamp != nil, IsShutDown(p)}
}
