package ttl

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDesiredTTL(t *testing.T) {
	tests := []struct {
		name             string
		step, nodes      int
		wantStep, wantTT int
	}{
		{name: "empty cluster", step: 0, nodes: 0, wantStep: 0, wantTT: 0},
		{name: "100 nodes stay at 0", step: 0, nodes: 100, wantStep: 0, wantTT: 0},
		{name: "101 nodes go to 15", step: 0, nodes: 101, wantStep: 1, wantTT: 15},
		{name: "back to 100 keeps 15", step: 1, nodes: 100, wantStep: 1, wantTT: 15},
		{name: "90 keeps 15", step: 1, nodes: 90, wantStep: 1, wantTT: 15},
		{name: "89 goes back to 0", step: 1, nodes: 89, wantStep: 0, wantTT: 0},
		{name: "500 stay at 15", step: 1, nodes: 500, wantStep: 1, wantTT: 15},
		{name: "501 go to 30", step: 1, nodes: 501, wantStep: 2, wantTT: 30},
		{name: "450 keep 30", step: 2, nodes: 450, wantStep: 2, wantTT: 30},
		{name: "449 go back to 15", step: 2, nodes: 449, wantStep: 1, wantTT: 15},
		{name: "1001 go to 60", step: 2, nodes: 1001, wantStep: 3, wantTT: 60},
		{name: "900 keep 60", step: 3, nodes: 900, wantStep: 3, wantTT: 60},
		{name: "899 go back to 30", step: 3, nodes: 899, wantStep: 2, wantTT: 30},
		{name: "2001 go to 300", step: 3, nodes: 2001, wantStep: 4, wantTT: 300},
		{name: "1800 keep 300", step: 4, nodes: 1800, wantStep: 4, wantTT: 300},
		{name: "1799 go back to 60", step: 4, nodes: 1799, wantStep: 3, wantTT: 60},
		{name: "the last step has no ceiling", step: 4, nodes: 1 << 30, wantStep: 4, wantTT: 300},
		{name: "95 nodes: the step decides", step: 0, nodes: 95, wantStep: 0, wantTT: 0},
		{name: "95 nodes after a larger cluster", step: 1, nodes: 95, wantStep: 1, wantTT: 15},
		{name: "a jump moves several steps up", step: 0, nodes: 5000, wantStep: 4, wantTT: 300},
		{name: "a drop moves several steps down", step: 4, nodes: 10, wantStep: 0, wantTT: 0},
		{name: "a step out of range is clamped", step: 9, nodes: 0, wantStep: 0, wantTT: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, ttl := desiredTTL(tt.step, tt.nodes)
			if step != tt.wantStep || ttl != tt.wantTT {
				t.Errorf("desiredTTL(%d, %d) = step %d, %ds; want step %d, %ds", tt.step, tt.nodes, step, ttl, tt.wantStep, tt.wantTT)
			}
		})
	}
}

// TestGrowAndShrink walks the cluster one node at a time, as the node events do.
func TestGrowAndShrink(t *testing.T) {
	step, ttl := 0, 0
	at := map[int]int{}
	for n := 1; n <= 2100; n++ {
		step, ttl = desiredTTL(step, n)
		at[n] = ttl
	}
	for n, want := range map[int]int{100: 0, 101: 15, 500: 15, 501: 30, 1000: 30, 1001: 60, 2000: 60, 2001: 300} {
		if at[n] != want {
			t.Errorf("growing, %d nodes: %ds, want %ds", n, at[n], want)
		}
	}
	for n := 2099; n >= 0; n-- {
		step, ttl = desiredTTL(step, n)
		at[n] = ttl
	}
	for n, want := range map[int]int{1800: 300, 1799: 60, 900: 60, 899: 30, 450: 30, 449: 15, 90: 15, 89: 0} {
		if at[n] != want {
			t.Errorf("shrinking, %d nodes: %ds, want %ds", n, at[n], want)
		}
	}
}

func TestCurrentTTL(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        int
		wantOK      bool
	}{
		{name: "none"},
		{name: "other annotations", annotations: map[string]string{"a": "1"}},
		{name: "a number", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "15"}, want: 15, wantOK: true},
		{name: "zero", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "0"}, want: 0, wantOK: true},
		{name: "not a number", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "15s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := currentTTL(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}})
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("currentTTL = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
