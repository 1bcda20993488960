package ephemeralvolume

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClaimFor(t *testing.T) {
	class := "fast"
	tmpl := &corev1.PersistentVolumeClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &class},
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
	v := &corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: tmpl}}}

	got := ClaimFor(p, v)
	want := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "web-data",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-1", Controller: new(true), BlockOwnerDeletion: new(true)}},
			Labels:          map[string]string{"a": "b"},
			Annotations:     map[string]string{"c": "d"},
		},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("ClaimFor = %+v, want %+v", got, want)
	}
	if got.Spec.StorageClassName == tmpl.Spec.StorageClassName {
		t.Error("the claim's spec shares memory with the pod's template")
	}
}
