package replicaset

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeletionAgeRatios(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	aged := func(name string, age time.Duration, ready bool) *corev1.Pod {
		p := testPod(name, "", ready)
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		return p
	}
	old, older, young, unready := aged("old", 25*time.Second, true), aged("older", time.Minute, true),
		aged("young", 10*time.Second, true), aged("unready", time.Second, false)
	tests := []struct {
		name          string
		pods, victims []*corev1.Pod
		want          []float64
	}{
		{"age over the youngest ready pod's, as whole quotients", []*corev1.Pod{old, older, young, unready},
			[]*corev1.Pod{older, old}, []float64{6, 2}},
		{"a victim not ready is not observed", []*corev1.Pod{young, unready}, []*corev1.Pod{unready}, nil},
		{"the youngest itself", []*corev1.Pod{young, old}, []*corev1.Pod{young}, []float64{1}},
		{"no ready pod: ages over the zero time", []*corev1.Pod{unready}, []*corev1.Pod{unready}, nil},
		{"a ready pod created now: nothing (upstream divides by zero)", []*corev1.Pod{aged("new", 0, true), old},
			[]*corev1.Pod{old}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deletionAgeRatios(tt.pods, tt.victims, now); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
