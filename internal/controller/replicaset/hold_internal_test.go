package replicaset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestHoldStatus(t *testing.T) {
	old := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2}
	failure := []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
	with := func(f func(*appsv1.ReplicaSetStatus)) appsv1.ReplicaSetStatus {
		s := old
		f(&s)
		return s
	}
	tests := []struct {
		name  string
		new   appsv1.ReplicaSetStatus
		dirty bool
		want  bool
	}{
		{"replicas, dirty: held", with(func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas = 5, 5 }), true, true},
		{"terminatingReplicas, dirty: held", with(func(s *appsv1.ReplicaSetStatus) { s.TerminatingReplicas = ptr.To[int32](2) }), true, true},
		{"replicas, not dirty: written", with(func(s *appsv1.ReplicaSetStatus) { s.Replicas = 5 }), false, false},
		{"readyReplicas: written", with(func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.ReadyReplicas = 5, 3 }), true, false},
		{"availableReplicas: written (the rollout waits on it)", with(func(s *appsv1.ReplicaSetStatus) { s.AvailableReplicas = 2 }), true, false},
		{"observedGeneration: written", with(func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.ObservedGeneration = 5, 3 }), true, false},
		{"a condition: written", with(func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.Conditions = 5, failure }), true, false},
	}
	for _, tt := range tests {
		if got := holdStatus(old, tt.new, tt.dirty); got != tt.want {
			t.Errorf("%s: holdStatus = %v, want %v", tt.name, got, tt.want)
		}
	}
}
