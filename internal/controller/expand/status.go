package expand

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resizeConditions are the claim conditions resizing owns; others are never touched.
var resizeConditions = map[corev1.PersistentVolumeClaimConditionType]bool{
	corev1.PersistentVolumeClaimFileSystemResizePending: true,
	corev1.PersistentVolumeClaimResizing:                true,
	corev1.PersistentVolumeClaimControllerResizeError:   true,
	corev1.PersistentVolumeClaimNodeResizeError:         true,
}

// fsResizePendingMessage is upstream's message of the FileSystemResizePending condition.
const fsResizePendingMessage = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."

// mergeResizeConditions returns the claim's conditions with the given resize conditions:
// a condition of the same type keeps its transition time unless its status changes; other
// resize conditions are kept only with keepOld; conditions not about resizing always stay.
func mergeResizeConditions(old []corev1.PersistentVolumeClaimCondition, set []corev1.PersistentVolumeClaimCondition, keepOld bool) []corev1.PersistentVolumeClaimCondition {
	pending := map[corev1.PersistentVolumeClaimConditionType]*corev1.PersistentVolumeClaimCondition{}
	for i := range set {
		pending[set[i].Type] = &set[i]
	}
	merged := []corev1.PersistentVolumeClaimCondition{}
	for _, c := range old {
		switch n, ok := pending[c.Type]; {
		case !resizeConditions[c.Type]:
			merged = append(merged, c)
		case ok:
			if n.Status != c.Status {
				merged = append(merged, *n)
			} else {
				merged = append(merged, c)
			}
			delete(pending, c.Type)
		case keepOld:
			merged = append(merged, c)
		}
	}
	for _, n := range set {
		if _, ok := pending[n.Type]; ok {
			merged = append(merged, n)
		}
	}
	return merged
}

// withResizer sets the claim's resizer annotation.
func withResizer(pvc *corev1.PersistentVolumeClaim, resizer string) {
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, AnnResizer, resizer)
}

// controllerResizeInProgress is upstream's MarkControllerReisizeInProgress: Resizing, the
// storage being expanded to in allocatedResources, ControllerResizeInProgress, the resizer.
func controllerResizeInProgress(pvc *corev1.PersistentVolumeClaim, resizer string, size resource.Quantity, now metav1.Time) *corev1.PersistentVolumeClaim {
	c := pvc.DeepCopy()
	c.Status.Conditions = mergeResizeConditions(c.Status.Conditions, []corev1.PersistentVolumeClaimCondition{{
		Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: now,
	}}, false)
	setResourceStatus(c, corev1.PersistentVolumeClaimControllerResizeInProgress)
	if c.Status.AllocatedResources == nil {
		c.Status.AllocatedResources = corev1.ResourceList{}
	}
	c.Status.AllocatedResources[corev1.ResourceStorage] = size
	withResizer(c, resizer)
	return c
}

// nodeResizePending is upstream's MarkForFSResize: the kubelet finishes the expansion.
func nodeResizePending(pvc *corev1.PersistentVolumeClaim, now metav1.Time) *corev1.PersistentVolumeClaim {
	c := pvc.DeepCopy()
	setResourceStatus(c, corev1.PersistentVolumeClaimNodeResizePending)
	c.Status.Conditions = mergeResizeConditions(c.Status.Conditions, []corev1.PersistentVolumeClaimCondition{{
		Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue,
		LastTransitionTime: now, Message: fsResizePendingMessage,
	}}, true)
	return c
}

// resizeFinished is upstream's MarkResizeFinished: the new capacity, no resize status, no
// resize conditions.
func resizeFinished(pvc *corev1.PersistentVolumeClaim, size resource.Quantity) *corev1.PersistentVolumeClaim {
	c := pvc.DeepCopy()
	if c.Status.Capacity == nil {
		c.Status.Capacity = corev1.ResourceList{}
	}
	c.Status.Capacity[corev1.ResourceStorage] = size
	delete(c.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(c.Status.AllocatedResourceStatuses) == 0 {
		c.Status.AllocatedResourceStatuses = nil
	}
	c.Status.Conditions = mergeResizeConditions(c.Status.Conditions, nil, false)
	return c
}

func setResourceStatus(c *corev1.PersistentVolumeClaim, s corev1.ClaimResourceStatus) {
	if c.Status.AllocatedResourceStatuses == nil {
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = s
}
