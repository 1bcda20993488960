package podgroupprotection

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kcm/kcm/internal/index"
)

// Finalizer is the finalizer the API server's PodGroupProtection admission plugin stamps on
// every new PodGroup; the controller only ever removes it.
const Finalizer = "scheduling.k8s.io/podgroup-protection"

// ActivePodGroupName indexes pods by the PodGroup their spec.schedulingGroup names, for
// pods not yet terminated only (keys are bare names; list with client.InNamespace): a
// PodGroup is in use while this index lists a pod for it, as upstream's pod index says.
const ActivePodGroupName = "spec.schedulingGroup.podGroupName/active"

// PodsByActivePodGroup is the ActivePodGroupName index of the shared cache.
var PodsByActivePodGroup = index.Index{Object: &corev1.Pod{}, Field: ActivePodGroupName, Extract: activePodGroupOf}

func activePodGroupOf(obj client.Object) []string {
	pod := obj.(*corev1.Pod)
	if Terminated(pod) {
		return nil
	}
	if name := PodGroupOf(pod); name != "" {
		return []string{name}
	}
	return nil
}

// PodGroupOf is the name of the PodGroup the pod belongs to, "" for none.
func PodGroupOf(pod *corev1.Pod) string {
	if pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil {
		return ""
	}
	return *pod.Spec.SchedulingGroup.PodGroupName
}

// Terminated: the pod has finished (Succeeded or Failed) and no longer holds its group.
func Terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsDeletionCandidate: the PodGroup is being deleted and still carries the finalizer, so
// the controller decides whether it may go.
func IsDeletionCandidate(pg *schedulingv1beta1.PodGroup) bool {
	return pg.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(pg, Finalizer)
}

// PodEventGroups are the PodGroups a pod event may release, as upstream's pod handler
// decides: a pod created or updated into a terminal phase, a pod deleted, and the old pod
// of an update that replaced one pod by another of the same name. oldPod is nil for a
// creation, newPod nil for a deletion. Names may repeat.
func PodEventGroups(oldPod, newPod *corev1.Pod) []string {
	var groups []string
	if newPod != nil && Terminated(newPod) {
		groups = append(groups, PodGroupOf(newPod))
	}
	if newPod != nil && oldPod != nil && oldPod.UID != newPod.UID {
		groups = append(groups, PodGroupOf(oldPod))
	}
	if newPod == nil && oldPod != nil {
		groups = append(groups, PodGroupOf(oldPod))
	}
	out := groups[:0]
	for _, g := range groups {
		if g != "" {
			out = append(out, g)
		}
	}
	return out
}
