// Package index holds the cache's field indexes: exported keys, with the functions that
// compute them, and the Index values controllers name in their descriptors (register.go).
package index

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Orphan is the ControllerUID value of objects that have no controller.
const Orphan = "<orphan>"

// ControllerUID indexes objects by the UID of their controller (Orphan when none), so an
// owner finds its children and the orphans it may adopt without listing everything.
const ControllerUID = "metadata.controllerUID"

// ControllerUIDOf is the ControllerUID index function.
func ControllerUIDOf(obj client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{Orphan}
}

// PodNodeName indexes pods by spec.nodeName ("" for unscheduled pods).
const PodNodeName = "spec.nodeName"

// PodNodeNameOf is the PodNodeName index function.
func PodNodeNameOf(obj client.Object) []string {
	return []string{obj.(*corev1.Pod).Spec.NodeName}
}

// PodClaimName indexes pods by the PersistentVolumeClaims their volumes name: the claimName
// of persistentVolumeClaim volumes and "<pod>-<volume>" for generic ephemeral volumes (the
// claim upstream's ephemeral-volume-controller creates for them). Keys are bare names; list
// with client.InNamespace.
const PodClaimName = "spec.volumes.claimName"

// PodClaimNameOf is the PodClaimName index function.
func PodClaimNameOf(obj client.Object) []string {
	p := obj.(*corev1.Pod)
	var names []string
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, ephemeral.VolumeClaimName(p, v))
		}
	}
	return names
}
