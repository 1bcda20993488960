package statefulset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

func TestConverged(t *testing.T) {
	done := appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3,
		CurrentReplicas: 3, CurrentRevision: "web-2", UpdateRevision: "web-2"}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.StatefulSet)
		want   bool
	}{
		{"update done", func(*appsv1.StatefulSet) {}, true},
		{"new generation not observed", func(s *appsv1.StatefulSet) { s.Generation = 3 }, false},
		{"a pod missing", func(s *appsv1.StatefulSet) { s.Status.Replicas = 2 }, false},
		{"scaled up, not yet seen", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](4) }, false},
		{"a pod at the old revision", func(s *appsv1.StatefulSet) { s.Status.UpdatedReplicas = 2 }, false},
		{"a pod not ready", func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 2 }, false},
		{"rollout not recorded done", func(s *appsv1.StatefulSet) { s.Status.CurrentRevision = "web-1" }, false},
		{"no status yet", func(s *appsv1.StatefulSet) { s.Status = appsv1.StatefulSetStatus{} }, false},
		{"scaled to zero", func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](0)
			s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "web-2", UpdateRevision: "web-2"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}, Status: done}
			s.Generation = 2
			tc.change(s)
			got, why := Converged(s)
			if got != tc.want || why == "" {
				t.Errorf("Converged = %v, %q; want %v with a reason", got, why, tc.want)
			}
		})
	}
}
