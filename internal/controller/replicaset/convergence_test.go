package replicaset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

func TestConverged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		generation int64
		replicas   *int32
		status     appsv1.ReplicaSetStatus
		want       bool
	}{
		{"all ready", 2, ptr.To[int32](3), appsv1.ReplicaSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3}, true},
		{"scaled to zero", 2, ptr.To[int32](0), appsv1.ReplicaSetStatus{ObservedGeneration: 2}, true},
		{"replicas unset means one", 1, nil, appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1}, true},
		{"new generation not observed", 3, ptr.To[int32](3), appsv1.ReplicaSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3}, false},
		{"a pod missing", 2, ptr.To[int32](3), appsv1.ReplicaSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2}, false},
		{"a pod too many", 2, ptr.To[int32](3), appsv1.ReplicaSetStatus{ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 3}, false},
		{"a pod not ready", 2, ptr.To[int32](3), appsv1.ReplicaSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2}, false},
		{"no status yet", 1, ptr.To[int32](1), appsv1.ReplicaSetStatus{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: tc.replicas}, Status: tc.status}
			rs.Generation = tc.generation
			got, why := Converged(rs)
			if got != tc.want || why == "" {
				t.Errorf("Converged = %v, %q; want %v with a reason", got, why, tc.want)
			}
		})
	}
}
