package pod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EphemeralClaimName is the name of the PersistentVolumeClaim of a generic ephemeral volume:
// "<pod>-<volume>", as k8s.io/component-helpers/storage/ephemeral.VolumeClaimName.
func EphemeralClaimName(p *corev1.Pod, v *corev1.Volume) string {
	return p.Name + "-" + v.Name
}

// EphemeralClaimIsFor reports whether the claim is the one created for the pod's generic
// ephemeral volume: same namespace and controlled by the pod, as upstream's
// ephemeral.VolumeIsForPod. A claim that merely has the right name may be someone else's.
func EphemeralClaimIsFor(p *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Namespace == p.Namespace && metav1.IsControlledBy(pvc, p)
}
