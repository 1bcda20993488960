package pvprotection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecisions(t *testing.T) {
	now := metav1.Now()
	pv := func(deleting bool, finalizers []string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Finalizers: finalizers}, Status: corev1.PersistentVolumeStatus{Phase: phase}}
		if deleting {
			v.DeletionTimestamp = &now
		}
		return v
	}
	cases := []struct {
		name                    string
		pv                      *corev1.PersistentVolume
		needs, candidate, inUse bool
	}{
		{"live without finalizer", pv(false, nil, corev1.VolumeAvailable), true, false, false},
		{"live with finalizer", pv(false, []string{Finalizer}, corev1.VolumeBound), false, false, true},
		{"deleted, bound", pv(true, []string{Finalizer}, corev1.VolumeBound), false, true, true},
		{"deleted, released", pv(true, []string{Finalizer}, corev1.VolumeReleased), false, true, false},
		{"deleted, other finalizer only", pv(true, []string{"other"}, corev1.VolumeFailed), false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NeedsFinalizer(c.pv); got != c.needs {
				t.Errorf("NeedsFinalizer = %v, want %v", got, c.needs)
			}
			if got := IsDeletionCandidate(c.pv); got != c.candidate {
				t.Errorf("IsDeletionCandidate = %v, want %v", got, c.candidate)
			}
			if got := IsUsed(c.pv); got != c.inUse {
				t.Errorf("IsUsed = %v, want %v", got, c.inUse)
			}
		})
	}
}
