package vacprotection

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestClaimReferences(t *testing.T) {
	claim := func(spec, current, target string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		if spec != "" {
			c.Spec.VolumeAttributesClassName = ptr.To(spec)
		}
		if current != "" {
			c.Status.CurrentVolumeAttributesClassName = ptr.To(current)
		}
		if target != "" {
			c.Status.ModifyVolumeStatus = &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: target}
		}
		return c
	}
	cases := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		want  []string
	}{
		{"none", claim("", "", ""), nil},
		{"spec only", claim("gold", "", ""), []string{"gold"}},
		{"current only", claim("", "silver", ""), []string{"silver"}},
		{"modification target only", claim("", "", "bronze"), []string{"bronze"}},
		{"all three distinct", claim("gold", "silver", "bronze"), []string{"gold", "silver", "bronze"}},
		{"the same class twice", claim("gold", "gold", "silver"), []string{"gold", "silver"}},
		{"empty spec pointer", &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeAttributesClassName: ptr.To("")}}, nil},
		{"modify status with no target", &corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{
			ModifyVolumeStatus: &corev1.ModifyVolumeStatus{Status: corev1.PersistentVolumeClaimModifyVolumeInProgress}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ClaimReferences(c.claim)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Errorf("ClaimReferences = %q, want %q", got, want)
			}
		})
	}
}

func TestVolumeReferences(t *testing.T) {
	cases := []struct {
		name string
		vac  *string
		want []string
	}{
		{"none", nil, nil},
		{"empty", ptr.To(""), nil},
		{"named", ptr.To("gold"), []string{"gold"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{VolumeAttributesClassName: c.vac}}
			if got := VolumeReferences(pv); !slices.Equal(got, c.want) {
				t.Errorf("VolumeReferences = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDropped(t *testing.T) {
	cases := []struct {
		name     string
		old, new []string
		want     []string
	}{
		{"nothing before", nil, []string{"gold"}, nil},
		{"unchanged", []string{"gold"}, []string{"gold"}, nil},
		{"moved to another class", []string{"gold"}, []string{"silver"}, []string{"gold"}},
		{"modification finished", []string{"gold", "silver"}, []string{"silver"}, []string{"gold"}},
		{"all dropped", []string{"gold", "silver"}, nil, []string{"gold", "silver"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Dropped(c.old, c.new); !slices.Equal(got, c.want) {
				t.Errorf("Dropped = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDecisions(t *testing.T) {
	now := metav1.Now()
	vac := func(deleting bool, finalizers ...string) *storagev1.VolumeAttributesClass {
		v := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold", Finalizers: finalizers}}
		if deleting {
			v.DeletionTimestamp = &now
		}
		return v
	}
	cases := []struct {
		name             string
		vac              *storagev1.VolumeAttributesClass
		needs, candidate bool
	}{
		{"live without finalizer", vac(false), true, false},
		{"live with another finalizer only", vac(false, "other"), true, false},
		{"live with finalizer", vac(false, Finalizer), false, false},
		{"deleted with finalizer", vac(true, "other", Finalizer), false, true},
		{"deleted with another finalizer only", vac(true, "other"), false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NeedsFinalizer(c.vac); got != c.needs {
				t.Errorf("NeedsFinalizer = %v, want %v", got, c.needs)
			}
			if got := IsDeletionCandidate(c.vac); got != c.candidate {
				t.Errorf("IsDeletionCandidate = %v, want %v", got, c.candidate)
			}
		})
	}
}
