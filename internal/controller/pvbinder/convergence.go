package pvbinder

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is the claims controller's convergence rule (the SLIs of issue 37), under its
// controller-runtime name.
var Convergence = convergence.Rule{
	Controller:  ControllerName + "-claims",
	Object:      &corev1.PersistentVolumeClaim{},
	Converged:   func(o client.Object) (bool, string) { return Converged(o.(*corev1.PersistentVolumeClaim)) },
	Description: "the claim is Bound",
}

// Converged is the claims controller's rule: the claim is Bound. A claim of a
// WaitForFirstConsumer class stays Pending, and so not converged, until a pod using it is
// scheduled; a Lost claim is not converged.
func Converged(c *corev1.PersistentVolumeClaim) (bool, string) {
	if c.Status.Phase == corev1.ClaimBound {
		return true, "Bound to " + c.Spec.VolumeName
	}
	phase := c.Status.Phase
	if phase == "" {
		phase = corev1.ClaimPending
	}
	return false, string(phase)
}
