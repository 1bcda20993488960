package deployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is deployment-controller's convergence rule (the SLIs of issue 37).
var Convergence = convergence.Rule{
	Controller:  ControllerName,
	Object:      &appsv1.Deployment{},
	Converged:   func(o client.Object) (bool, string) { return Converged(o.(*appsv1.Deployment)) },
	Description: "Complete (Progressing NewReplicaSetAvailable) at the current generation, every replica updated and available, no old replica left",
}

// Converged is deployment-controller's rule: the Deployment is Complete as `kubectl rollout
// status` sees it (the status observes the current generation, every replica of spec.replicas
// is updated and available, no old replica is left, Progressing says NewReplicaSetAvailable
// when the Deployment has a progress deadline), with why not in a few words.
func Converged(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("generation %d not observed yet (observed %d)", d.Generation, s.ObservedGeneration)
	case s.UpdatedReplicas != want:
		return false, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)
	case s.Replicas != s.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas left", s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas != want:
		return false, fmt.Sprintf("%d of %d updated replicas available", s.AvailableReplicas, want)
	}
	// Without a progress deadline (MaxInt32) the controller keeps no Progressing condition,
	// as upstream: the counts are all there is.
	if c := getCondition(s, appsv1.DeploymentProgressing); hasProgressDeadline(d) &&
		(c == nil || c.Status != corev1.ConditionTrue || c.Reason != reasonNewRSAvailable) {
		return false, "not Complete: Progressing is not NewReplicaSetAvailable"
	}
	return true, fmt.Sprintf("complete: %d replicas updated and available", want)
}
