package replicaset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is replicaset-controller's convergence rule (the SLIs of issue 37).
var Convergence = convergence.Rule{
	Controller:  ReplicaSetKind.ControllerName,
	Object:      &appsv1.ReplicaSet{},
	Converged:   func(o client.Object) (bool, string) { return Converged(o.(*appsv1.ReplicaSet)) },
	Description: "readyReplicas == replicas == spec.replicas at the current generation",
}

// Converged is replicaset-controller's rule: the status observes the current generation and
// as many replicas as spec.replicas exist and are ready, with why not in a few words.
func Converged(rs *appsv1.ReplicaSet) (bool, string) {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	s := rs.Status
	switch {
	case s.ObservedGeneration < rs.Generation:
		return false, fmt.Sprintf("generation %d not observed yet (observed %d)", rs.Generation, s.ObservedGeneration)
	case s.Replicas != want:
		return false, fmt.Sprintf("%d of %d replicas", s.Replicas, want)
	case s.ReadyReplicas != want:
		return false, fmt.Sprintf("%d of %d replicas ready", s.ReadyReplicas, want)
	}
	return true, fmt.Sprintf("%d replicas ready", want)
}
