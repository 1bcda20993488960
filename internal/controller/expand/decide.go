package expand

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	csitrans "k8s.io/csi-translation-lib"
)

// expander says who expands a volume: upstream's choice between CSI migration, its
// expandable plugins and an external controller.
type expander int

const (
	// byExternalController: a CSI volume (its external resizer watches it), or an in-tree
	// source none of upstream's expandable plugins supports. The claim is only told so.
	byExternalController expander = iota
	// byMigratedDriver: an in-tree source migrated to CSI; the claim is annotated with the
	// CSI driver whose external resizer expands it.
	byMigratedDriver
	// byKubelet: a FlexVolume, which the kubelet expands; the controller does the
	// control-plane half itself (upstream's no-op expandable plugin).
	byKubelet
)

// translator maps in-tree sources to their CSI drivers, as upstream's csimigration does.
var translator = csitrans.New()

// expanderOf returns who expands the volume, and the name the claim's resizer annotation
// gets: the CSI driver of a migrated source, the FlexVolume driver. Every in-tree plugin the
// translation library knows is migrated in v1.37 (upstream's IsMigrationEnabledForPlugin),
// and none of the plugins upstream's expand controller probes (hostPath, NFS, FC, iSCSI,
// CSI) can expand on the controller, so only FlexVolumes are expanded here.
func expanderOf(pv *corev1.PersistentVolume) (who expander, inTreePlugin, resizer string, err error) {
	if plugin, _ := translator.GetInTreePluginNameFromSpec(pv, nil); plugin != "" {
		driver, err := translator.GetCSINameFromInTreeName(plugin)
		return byMigratedDriver, plugin, driver, err
	}
	if pv.Spec.FlexVolume != nil {
		return byKubelet, "", pv.Spec.FlexVolume.Driver, nil
	}
	return byExternalController, "", "", nil
}

// needsExpansion is upstream's test before doing anything: the claim asks for more than its
// status reports, or the volume still carries the pre-resize capacity of an unfinished one.
func needsExpansion(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	current := pvc.Status.Capacity[corev1.ResourceStorage]
	return request.Cmp(current) > 0 || metav1.HasAnnotation(pv.ObjectMeta, AnnPreResizeCapacity)
}

// step is what the controller does for a volume it expands itself.
type step int

const (
	// stepNone: the node's part is pending or running; nothing to do.
	stepNone step = iota
	// stepDropPreResize: expansion finished on the node; the volume's pre-resize annotation goes.
	stepDropPreResize
	// stepNodePending: the volume has its size but node expansion was infeasible; the
	// kubelet may try again (upstream's case 3 of expandAndRecoverFunction).
	stepNodePending
	// stepExpand: expand the volume to the returned size.
	stepExpand
)

// nextStep is upstream's expandAndRecoverFunction decision (RecoverVolumeExpansionFailure):
// the size to expand to is the claim's request, unless an expansion already started (then
// the size it allocated, so that a request lowered to recover from a failure is not
// mistaken for the size being expanded to).
func nextStep(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (step, resource.Quantity) {
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if nodeExpandComplete(pvc, pv) && metav1.HasAnnotation(pv.ObjectMeta, AnnPreResizeCapacity) {
		return stepDropPreResize, resource.Quantity{}
	}
	status := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	allocated, hasAllocated := pvc.Status.AllocatedResources[corev1.ResourceStorage]
	volumeSize := pv.Spec.Capacity[corev1.ResourceStorage]

	if volumeSize.Cmp(request) < 0 {
		// The volume is not of the requested size yet.
		switch status {
		case corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimNodeResizePending,
			corev1.PersistentVolumeClaimNodeResizeInProgress, corev1.PersistentVolumeClaimNodeResizeInfeasible:
			if hasAllocated {
				return stepExpand, allocated
			}
		}
		return stepExpand, request
	}
	// The volume was expanded already.
	switch status {
	case corev1.PersistentVolumeClaimNodeResizeInProgress, corev1.PersistentVolumeClaimNodeResizePending:
		// The kubelet's turn (a spurious update brought the claim).
		return stepNone, resource.Quantity{}
	case corev1.PersistentVolumeClaimNodeResizeInfeasible:
		return stepNodePending, resource.Quantity{}
	case corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimControllerResizeInfeasible:
		// Our work was not all recorded, or the user shrank the request after it: resume
		// to the allocated size.
		if hasAllocated {
			return stepExpand, allocated
		}
		return stepExpand, request
	case "":
		if hasAllocated {
			return stepExpand, allocated
		}
	}
	return stepExpand, request
}

// nodeExpandComplete is upstream's isNodeExpandComplete: the claim's status capacity covers
// both its request and the volume's capacity (volumes may be shrunk back, so both count).
func nodeExpandComplete(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	current := pvc.Status.Capacity[corev1.ResourceStorage]
	volumeSize := pv.Spec.Capacity[corev1.ResourceStorage]
	return current.Cmp(request) >= 0 && current.Cmp(volumeSize) >= 0
}

// filesystemVolume is upstream's CheckVolumeModeFilesystem: only a Block volume needs no
// file system resize on the node.
func filesystemVolume(pv *corev1.PersistentVolume) bool {
	return pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != corev1.PersistentVolumeBlock
}
