package namespace

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is namespace-controller's convergence rule (the SLIs of issue 37): its work is
// deleting Namespaces, so a Namespace being deleted converges when it is gone.
var Convergence = convergence.Rule{
	Controller:    ControllerName,
	Object:        &corev1.Namespace{},
	Converged:     func(o client.Object) (bool, string) { return Converged(o.(*corev1.Namespace)) },
	GoneConverges: true,
	Description:   "a Namespace being deleted is gone (from its deletionTimestamp seen to its delete)",
}

// Converged is namespace-controller's rule on a Namespace still there: converged unless it is
// being deleted (its deletion converges when the informer sees it gone).
func Converged(ns *corev1.Namespace) (bool, string) {
	if ns.DeletionTimestamp != nil {
		return false, "being deleted: " + string(ns.Status.Phase)
	}
	return true, "not being deleted"
}
