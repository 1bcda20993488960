package attachdetach

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
)

// csiPluginName is upstream's CSI volume plugin: the prefix of every unique volume name the
// controller reports in node.status.volumesAttached.
const csiPluginName = "kubernetes.io/csi"

// volume is one attachable volume as upstream's CSI plugin sees it, in-tree sources already
// translated to CSI.
type volume struct {
	// UniqueName is upstream's unique volume name, kubernetes.io/csi/<driver>^<handle>: the
	// name in node.status.volumesAttached and volumesInUse.
	UniqueName corev1.UniqueVolumeName
	Driver     string
	Handle     string
	// SpecName names the volume in Events: the PersistentVolume's name, or for an inline
	// volume the name of the PersistentVolume csi-translation-lib made of it.
	SpecName string
	// PVName is the PersistentVolume the VolumeAttachment names; empty for an inline volume,
	// whose translated spec the VolumeAttachment carries instead (Inline).
	PVName string
	Inline *corev1.PersistentVolumeSpec
	// MultiAttach: the volume may be attached to several nodes at once (upstream's
	// IsMultiAttachAllowed).
	MultiAttach bool
	// StatusOnly: an in-tree iSCSI or Fibre Channel volume, which upstream's plugins attach
	// from the node: the controller only lists it in node.status.volumesAttached (their
	// attachers do nothing in the controller), and no VolumeAttachment exists.
	StatusOnly bool
}

// The in-tree plugins upstream's controller attaches without a VolumeAttachment.
const (
	iscsiPluginName = "kubernetes.io/iscsi"
	fcPluginName    = "kubernetes.io/fc"
)

// statusOnly is the volume of an iSCSI or Fibre Channel source, named as upstream's plugins
// name it (GetVolumeName), or nil. modes are a PersistentVolume's access modes (nil inline:
// upstream allows an inline volume on several nodes).
func statusOnly(iscsi *iscsiTarget, fc *corev1.FCVolumeSource, specName string, modes []corev1.PersistentVolumeAccessMode) *volume {
	var plugin, name string
	switch {
	case iscsi != nil:
		plugin, name = iscsiPluginName, fmt.Sprintf("%v:%v:%v", iscsi.portal, iscsi.iqn, iscsi.lun)
	case fc != nil && len(fc.TargetWWNs) != 0 && fc.Lun != nil:
		plugin, name = fcPluginName, fmt.Sprintf("%v:%v", fc.TargetWWNs, *fc.Lun)
	case fc != nil && len(fc.WWIDs) != 0:
		plugin, name = fcPluginName, fmt.Sprintf("%v", fc.WWIDs)
	default:
		return nil
	}
	return &volume{UniqueName: corev1.UniqueVolumeName(plugin + "/" + name), SpecName: specName,
		MultiAttach: multiAttachAllowed(modes), StatusOnly: true}
}

// iscsiTarget is what names an iSCSI volume, inline or persistent.
type iscsiTarget struct {
	portal, iqn string
	lun         int32
}

// isStatusOnly reports whether a unique volume name is an iSCSI or Fibre Channel one.
func isStatusOnly(name corev1.UniqueVolumeName) bool {
	return strings.HasPrefix(string(name), iscsiPluginName+"/") || strings.HasPrefix(string(name), fcPluginName+"/")
}

// uniqueName is upstream's name of a CSI volume.
func uniqueName(driver, handle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(csiPluginName + "/" + driver + "^" + handle)
}

// attachmentName is upstream's VolumeAttachment name for a volume on a node:
// csi-<sha256 of handle, driver and node name>.
func attachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// pluginLabel is the volume plugin label of upstream's metrics for a CSI volume.
func pluginLabel(driver string) string { return csiPluginName + ":" + driver }

// pluginOf is the volume plugin label of upstream's metrics for a volume: the CSI driver's,
// or the plugin's (kubernetes.io/iscsi, kubernetes.io/fc).
func pluginOf(name corev1.UniqueVolumeName) string {
	if driver, _, ok := splitCSIName(name); ok {
		return pluginLabel(driver)
	}
	plugin, _, _ := strings.Cut(string(name), "/")
	rest := strings.TrimPrefix(string(name), plugin+"/")
	kind, _, _ := strings.Cut(rest, "/")
	return plugin + "/" + kind
}

// cacheView is what resolving a pod's volumes reads: the shared cache's claims, volumes and
// CSIDrivers. Absent objects are (nil, nil).
type cacheView interface {
	claim(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	persistentVolume(name string) (*corev1.PersistentVolume, error)
	csiDriver(name string) (*storagev1.CSIDriver, error)
}

// errNotAttachable: the volume is not one the controller attaches (not CSI nor migrated to
// CSI, an ephemeral inline CSI volume, or its driver's CSIDriver says attachRequired: false).
var errNotAttachable = errors.New("volume does not need attaching")

var translator = csitrans.New()

// resolve is upstream's volume spec for one of pod's volumes, as the attach-detach
// controller builds it (CreateVolumeSpecWithNodeMigration, then FindAttachablePluginBySpec):
// a claim must be bound to a volume bound back to it, a generic ephemeral volume's claim
// must be owned by the pod, in-tree sources are translated to CSI (migration is complete
// for every in-tree plugin in v1.37, so the node's CSINode is not consulted), and the
// driver must require attaching (no CSIDriver object: it does).
func resolve(v cacheView, pod *corev1.Pod, podVolume *corev1.Volume) (*volume, error) {
	pv, inline, err := specOf(v, pod, podVolume)
	if err != nil {
		return nil, err
	}
	if inline != nil {
		// An inline CSI volume is ephemeral: the kubelet publishes it, nothing attaches it.
		if inline.CSI != nil {
			return nil, errNotAttachable
		}
		var target *iscsiTarget
		if i := inline.ISCSI; i != nil {
			target = &iscsiTarget{i.TargetPortal, i.IQN, i.Lun}
		}
		if v := statusOnly(target, inline.FC, inline.Name, nil); v != nil {
			return v, nil
		}
		if name, _ := translator.GetInTreePluginNameFromSpec(nil, inline); name == "" {
			return nil, errNotAttachable
		}
		translated, err := translator.TranslateInTreeInlineVolumeToCSI(klog.Background(), inline, pod.Namespace)
		if err != nil {
			return nil, fmt.Errorf("translating inline volume %s to CSI: %w", inline.Name, err)
		}
		return attachable(v, translated, true)
	}
	var target *iscsiTarget
	if i := pv.Spec.ISCSI; i != nil {
		target = &iscsiTarget{i.TargetPortal, i.IQN, i.Lun}
	}
	if v := statusOnly(target, pv.Spec.FC, pv.Name, pv.Spec.AccessModes); v != nil {
		v.PVName = pv.Name
		return v, nil
	}
	if pv.Spec.CSI == nil {
		if name, _ := translator.GetInTreePluginNameFromSpec(pv, nil); name == "" {
			return nil, errNotAttachable
		}
		if pv, err = translator.TranslateInTreePVToCSI(klog.Background(), pv); err != nil {
			return nil, fmt.Errorf("translating volume %s to CSI: %w", pv.Name, err)
		}
	}
	return attachable(v, pv, false)
}

// specOf finds what a pod volume mounts: the bound PersistentVolume of its claim, or the
// inline source itself.
func specOf(v cacheView, pod *corev1.Pod, podVolume *corev1.Volume) (*corev1.PersistentVolume, *corev1.Volume, error) {
	var claimName string
	switch {
	case podVolume.PersistentVolumeClaim != nil:
		claimName = podVolume.PersistentVolumeClaim.ClaimName
	case podVolume.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(pod, podVolume)
	default:
		return nil, podVolume, nil
	}
	pvc, err := v.claim(pod.Namespace, claimName)
	if err != nil {
		return nil, nil, err
	}
	if pvc == nil {
		return nil, nil, fmt.Errorf("claim %s/%s not found", pod.Namespace, claimName)
	}
	if podVolume.Ephemeral != nil {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return nil, nil, err
		}
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, nil, fmt.Errorf("claim %s/%s is not bound", pod.Namespace, claimName)
	}
	pv, err := v.persistentVolume(pvc.Spec.VolumeName)
	if err != nil {
		return nil, nil, err
	}
	if pv == nil {
		return nil, nil, fmt.Errorf("volume %s of claim %s/%s not found", pvc.Spec.VolumeName, pod.Namespace, claimName)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, nil, fmt.Errorf("volume %s is not bound to claim %s/%s", pv.Name, pod.Namespace, claimName)
	}
	return pv, nil, nil
}

// attachable is the volume of a CSI PersistentVolume (real or translated from an in-tree
// source) when its driver requires attaching.
func attachable(v cacheView, pv *corev1.PersistentVolume, inline bool) (*volume, error) {
	src := pv.Spec.CSI
	driver, err := v.csiDriver(src.Driver)
	if err != nil {
		return nil, err
	}
	if driver != nil && driver.Spec.AttachRequired != nil && !*driver.Spec.AttachRequired {
		return nil, errNotAttachable
	}
	vol := &volume{
		UniqueName:  uniqueName(src.Driver, src.VolumeHandle),
		Driver:      src.Driver,
		Handle:      src.VolumeHandle,
		SpecName:    pv.Name,
		MultiAttach: multiAttachAllowed(pv.Spec.AccessModes),
	}
	if inline {
		vol.Inline = &pv.Spec
	} else {
		vol.PVName = pv.Name
	}
	return vol, nil
}

// multiAttachAllowed is upstream's IsMultiAttachAllowed for a PersistentVolume: without
// access modes nothing is known and the attacher decides; otherwise only ReadWriteMany and
// ReadOnlyMany volumes may be attached to several nodes.
func multiAttachAllowed(modes []corev1.PersistentVolumeAccessMode) bool {
	if len(modes) == 0 {
		return true
	}
	for _, m := range modes {
		if m == corev1.ReadWriteMany || m == corev1.ReadOnlyMany {
			return true
		}
	}
	return false
}

// mayNeedAttaching reports whether a pod volume can resolve to an attachable volume at all
// (a claim, a generic ephemeral volume, an in-tree source migrated to CSI, iSCSI or Fibre
// Channel): pods with none of these never concern the controller.
func mayNeedAttaching(v *corev1.Volume) bool {
	if v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.ISCSI != nil || v.FC != nil {
		return true
	}
	name, _ := translator.GetInTreePluginNameFromSpec(nil, v)
	return name != ""
}

// podNeedsVolumes is upstream's choice of pods whose volumes are wanted: scheduled and not
// terminated (DetermineVolumeAction with IsPodTerminated: Succeeded or Failed, or deleted
// with no container running).
func podNeedsVolumes(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return false
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if p.DeletionTimestamp != nil && notRunning(p.Status.InitContainerStatuses) &&
		notRunning(p.Status.ContainerStatuses) && notRunning(p.Status.EphemeralContainerStatuses) {
		return false
	}
	return true
}

func notRunning(statuses []corev1.ContainerStatus) bool {
	for _, s := range statuses {
		if s.State.Terminated == nil && s.State.Waiting == nil {
			return false
		}
	}
	return true
}
