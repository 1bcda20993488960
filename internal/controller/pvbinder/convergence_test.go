package pvbinder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestConverged(t *testing.T) {
	for _, tc := range []struct {
		phase corev1.PersistentVolumeClaimPhase
		want  bool
	}{
		{"", false},
		{corev1.ClaimPending, false},
		{corev1.ClaimBound, true},
		{corev1.ClaimLost, false},
	} {
		c := &corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Phase: tc.phase}}
		if got, why := Converged(c); got != tc.want || why == "" {
			t.Errorf("phase %q: Converged = %v, %q; want %v with a reason", tc.phase, got, why, tc.want)
		}
	}
}
