package vacprotection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ClaimReferences are the classes a claim refers to, as upstream counts them: the class it
// asks for (spec), the one its volume has (status.currentVolumeAttributesClassName) and the
// one a modification in progress moves to (status.modifyVolumeStatus). Each name once.
func ClaimReferences(pvc *corev1.PersistentVolumeClaim) []string {
	var names []string
	add := func(name string) {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	add(ptr.Deref(pvc.Spec.VolumeAttributesClassName, ""))
	add(ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, ""))
	if s := pvc.Status.ModifyVolumeStatus; s != nil {
		add(s.TargetVolumeAttributesClassName)
	}
	return names
}

// VolumeReferences are the classes a volume refers to: its spec.volumeAttributesClassName.
func VolumeReferences(pv *corev1.PersistentVolume) []string {
	if name := ptr.Deref(pv.Spec.VolumeAttributesClassName, ""); name != "" {
		return []string{name}
	}
	return nil
}

// Dropped are the classes old referred to and updated no longer does: only those may have
// become unused. A reference added frees nothing, so upstream looks at no other change.
func Dropped(old, updated []string) []string {
	var names []string
	for _, name := range old {
		if !slices.Contains(updated, name) {
			names = append(names, name)
		}
	}
	return names
}

// NeedsFinalizer reports whether a live class lacks the finalizer: the API server's
// admission adds it on create; this catches classes created while it was off.
func NeedsFinalizer(vac *storagev1.VolumeAttributesClass) bool {
	return vac.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(vac, Finalizer)
}

// IsDeletionCandidate reports whether the class is being deleted and waits for this
// controller's finalizer.
func IsDeletionCandidate(vac *storagev1.VolumeAttributesClass) bool {
	return vac.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(vac, Finalizer)
}
