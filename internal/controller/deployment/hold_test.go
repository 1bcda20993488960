package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestHoldStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
		Reason: "ReplicaSetUpdated", Message: `ReplicaSet "d-1" is progressing.`, LastUpdateTime: t0, LastTransitionTime: t0}
	written := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 2, Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 12, UpdatedReplicas: 4, ReadyReplicas: 9, AvailableReplicas: 9,
			UnavailableReplicas: 3, Conditions: []appsv1.DeploymentCondition{progressing}},
	}
	with := func(f func(*appsv1.Deployment)) *appsv1.Deployment {
		d := written.DeepCopy()
		f(d)
		return d
	}
	tests := []struct {
		name  string
		d     *appsv1.Deployment
		dirty bool
		want  bool
	}{
		{"counts and lastUpdateTime, dirty: held", with(func(d *appsv1.Deployment) {
			d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.UnavailableReplicas = 5, 10, 2
			d.Status.Conditions[0].LastUpdateTime = metav1.NewTime(t0.Add(time.Second))
		}), true, true},
		{"terminatingReplicas, dirty: held", with(func(d *appsv1.Deployment) { d.Status.TerminatingReplicas = ptr.To[int32](1) }), true, true},
		{"counts, not dirty: written", with(func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 5 }), false, false},
		{"availableReplicas: written", with(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 10 }), true, false},
		{"observedGeneration: written", with(func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 3 }), true, false},
		{"an annotation: written", with(func(d *appsv1.Deployment) { d.Annotations["deployment.kubernetes.io/revision"] = "3" }), true, false},
		{"collisionCount: written", with(func(d *appsv1.Deployment) { d.Status.CollisionCount = ptr.To[int32](1) }), true, false},
		{"a condition's reason: written", with(func(d *appsv1.Deployment) { d.Status.Conditions[0].Reason = "NewReplicaSetAvailable" }), true, false},
		{"a condition's status: written", with(func(d *appsv1.Deployment) { d.Status.Conditions[0].Status = corev1.ConditionFalse }), true, false},
		{"a new condition: written", with(func(d *appsv1.Deployment) {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue})
		}), true, false},
	}
	for _, tt := range tests {
		if got := holdStatus(written, tt.d, true, tt.dirty); got != tt.want {
			t.Errorf("%s: holdStatus = %v, want %v", tt.name, got, tt.want)
		}
	}
}
