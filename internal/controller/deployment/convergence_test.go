package deployment

import (
	"math"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestConverged(t *testing.T) {
	complete := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), ProgressDeadlineSeconds: ptr.To[int32](600)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: reasonMinimumReplicasAvailable},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: reasonNewRSAvailable},
				}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.Deployment)
		want   bool
	}{
		{"complete", func(d *appsv1.Deployment) { d.Generation = 2 }, true},
		{"new generation not observed", func(d *appsv1.Deployment) { d.Generation = 3 }, false},
		{"a replica not updated", func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 2 }, false},
		{"an old replica left", func(d *appsv1.Deployment) { d.Status.Replicas = 4 }, false},
		{"a replica unavailable", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, false},
		{"scaled up, not yet seen", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, false},
		{"still progressing", func(d *appsv1.Deployment) { d.Status.Conditions[1].Reason = reasonReplicaSetUpdated }, false},
		{"deadline exceeded", func(d *appsv1.Deployment) {
			d.Status.Conditions[1].Status, d.Status.Conditions[1].Reason = corev1.ConditionFalse, reasonTimedOut
		}, false},
		{"no Progressing condition", func(d *appsv1.Deployment) { d.Status.Conditions = d.Status.Conditions[:1] }, false},
		{"no progress deadline, no Progressing condition", func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
			d.Status.Conditions = d.Status.Conditions[:1]
		}, true},
		{"no progress deadline, a replica unavailable", func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
			d.Status.Conditions = d.Status.Conditions[:1]
			d.Status.AvailableReplicas = 2
		}, false},
		{"no status yet", func(d *appsv1.Deployment) { d.Generation = 1; d.Status = appsv1.DeploymentStatus{} }, false},
		{"replicas unset means one", func(d *appsv1.Deployment) {
			d.Spec.Replicas = nil
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 1, 1, 1
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := complete()
			tc.change(d)
			got, why := Converged(d)
			if got != tc.want || why == "" {
				t.Errorf("Converged = %v, %q; want %v with a reason", got, why, tc.want)
			}
		})
	}
}
