package statefulset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is statefulset-controller's convergence rule (the SLIs of issue 37).
var Convergence = convergence.Rule{
	Controller:  ControllerName,
	Object:      &appsv1.StatefulSet{},
	Converged:   func(o client.Object) (bool, string) { return Converged(o.(*appsv1.StatefulSet)) },
	Description: "update done at the current generation: currentRevision == updateRevision, readyReplicas == updatedReplicas == replicas == spec.replicas",
}

// Converged is statefulset-controller's rule: its update is done as `kubectl rollout status`
// sees a RollingUpdate's (the status observes the current generation, every pod of
// spec.replicas is at the update revision and ready, and the current revision is the update
// revision), with why not in a few words. A partitioned rollout or an OnDelete StatefulSet
// whose pods were not deleted is not converged: their update is not done.
func Converged(s *appsv1.StatefulSet) (bool, string) {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	st := s.Status
	switch {
	case st.ObservedGeneration < s.Generation:
		return false, fmt.Sprintf("generation %d not observed yet (observed %d)", s.Generation, st.ObservedGeneration)
	case st.Replicas != want:
		return false, fmt.Sprintf("%d of %d replicas", st.Replicas, want)
	case st.UpdatedReplicas != want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.ReadyReplicas != want:
		return false, fmt.Sprintf("%d of %d replicas ready", st.ReadyReplicas, want)
	case st.CurrentRevision != st.UpdateRevision:
		return false, fmt.Sprintf("current revision %s, not yet the update revision %s", st.CurrentRevision, st.UpdateRevision)
	}
	return true, fmt.Sprintf("%d replicas ready at revision %s", want, st.UpdateRevision)
}
