package namespace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConverged(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		ns   *corev1.Namespace
		want bool
	}{
		{"active", &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, true},
		{"being deleted", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Converged(tc.ns)
			if got != tc.want || why == "" {
				t.Errorf("Converged = %v, %q; want %v with a reason", got, why, tc.want)
			}
		})
	}
	if !Convergence.GoneConverges {
		t.Error("a Namespace being deleted converges when it is gone: the rule must say so")
	}
}
