package selinuxwarning

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
)

// This file names a pod's volume as upstream's volume plugins name it, so that two pods
// using the same storage meet on one name: the same PersistentVolume, or the same inline
// storage (an iSCSI LUN written in two pods). Upstream's controller loads the plugins
// kube-controller-manager has (host-path, nfs, fc, iscsi, csi); in-tree volumes whose
// plugins moved to CSI drivers are first translated to their CSI form, as upstream, with
// the published k8s.io/csi-translation-lib.

// Upstream's volume plugin names, the prefix of a unique volume name.
const (
	pluginCSI      = "kubernetes.io/csi"
	pluginFC       = "kubernetes.io/fc"
	pluginISCSI    = "kubernetes.io/iscsi"
	pluginNFS      = "kubernetes.io/nfs"
	pluginHostPath = "kubernetes.io/host-path"
)

// csiVolumeNameSep separates a CSI volume's driver and handle in its name.
const csiVolumeNameSep = "^"

// volumeSpec is a pod volume as the plugins see it: the inline volume, or the
// PersistentVolume its claim is bound to.
type volumeSpec struct {
	Inline *corev1.Volume
	PV     *corev1.PersistentVolume
}

// Name is the spec's name in messages: the pod volume's or the PersistentVolume's.
func (s volumeSpec) Name() string {
	if s.PV != nil {
		return s.PV.Name
	}
	return s.Inline.Name
}

// migrated translates an in-tree volume whose plugin moved to a CSI driver (AWS EBS, GCE
// PD, Azure Disk and File, Cinder, vSphere, Portworx: all migrated in v1.37) to its CSI
// PersistentVolume; other specs are returned as they are.
func migrated(logger klog.Logger, s volumeSpec, namespace string) (volumeSpec, error) {
	t := csitrans.New()
	if name, _ := t.GetInTreePluginNameFromSpec(s.PV, s.Inline); name == "" {
		return s, nil
	}
	var pv *corev1.PersistentVolume
	var err error
	if s.PV != nil {
		pv, err = t.TranslateInTreePVToCSI(logger, s.PV)
	} else {
		pv, err = t.TranslateInTreeInlineVolumeToCSI(logger, s.Inline, namespace)
	}
	if err != nil {
		return volumeSpec{}, fmt.Errorf("translating volume %s to CSI: %w", s.Name(), err)
	}
	return volumeSpec{PV: pv}, nil
}

// plugin is the volume plugin of a spec and what it says about SELinux mounts.
type plugin struct {
	// Name is upstream's plugin name; "" when no plugin kcm knows handles the volume
	// (emptyDir, configMap, ...), which upstream skips too.
	Name string
	// CSIDriver is the driver of a CSI volume; whether it mounts with -o context is its
	// CSIDriver's spec.seLinuxMount.
	CSIDriver string
	// SupportsMount: the in-tree plugin mounts with -o context (fc, iscsi), or cannot
	// (host-path, nfs).
	SupportsMount bool
}

// pluginOf finds the plugin of a spec, as upstream's plugin manager does.
func pluginOf(s volumeSpec) plugin {
	pv, vol := pvSource(s), inlineSource(s)
	switch {
	case pv.CSI != nil:
		return plugin{Name: pluginCSI, CSIDriver: pv.CSI.Driver}
	case vol.CSI != nil:
		return plugin{Name: pluginCSI, CSIDriver: vol.CSI.Driver}
	case pv.FC != nil || vol.FC != nil:
		return plugin{Name: pluginFC, SupportsMount: true}
	case pv.ISCSI != nil || vol.ISCSI != nil:
		return plugin{Name: pluginISCSI, SupportsMount: true}
	case pv.NFS != nil || vol.NFS != nil:
		return plugin{Name: pluginNFS}
	case pv.HostPath != nil || vol.HostPath != nil:
		return plugin{Name: pluginHostPath}
	}
	return plugin{}
}

// uniqueName is the volume's name across pods, "<plugin>/<plugin's volume name>", as
// upstream's. An inline CSI volume has none (upstream's CSI plugin names only persistent
// ones): that is an error, as upstream.
func uniqueName(p plugin, s volumeSpec) (corev1.UniqueVolumeName, error) {
	pv, vol := pvSource(s), inlineSource(s)
	var name string
	switch p.Name {
	case pluginCSI:
		if pv.CSI == nil {
			return "", fmt.Errorf("volume %s: an inline CSI volume has no unique name", s.Name())
		}
		name = pv.CSI.Driver + csiVolumeNameSep + pv.CSI.VolumeHandle
	case pluginFC:
		fc := vol.FC
		if pv.FC != nil {
			fc = pv.FC
		}
		switch {
		case len(fc.TargetWWNs) != 0 && fc.Lun != nil:
			name = fmt.Sprintf("%v:%v", fc.TargetWWNs, *fc.Lun)
		case len(fc.WWIDs) != 0:
			name = fmt.Sprintf("%v", fc.WWIDs)
		}
	case pluginISCSI:
		if pv.ISCSI != nil {
			name = fmt.Sprintf("%v:%v:%v", pv.ISCSI.TargetPortal, pv.ISCSI.IQN, pv.ISCSI.Lun)
		} else {
			name = fmt.Sprintf("%v:%v:%v", vol.ISCSI.TargetPortal, vol.ISCSI.IQN, vol.ISCSI.Lun)
		}
	case pluginNFS:
		if pv.NFS != nil {
			name = pv.NFS.Server + "/" + pv.NFS.Path
		} else {
			name = vol.NFS.Server + "/" + vol.NFS.Path
		}
	case pluginHostPath:
		if pv.HostPath != nil {
			name = pv.HostPath.Path
		} else {
			name = vol.HostPath.Path
		}
	}
	if name == "" {
		return "", errors.New("volume " + s.Name() + ": its plugin gives it no name")
	}
	return corev1.UniqueVolumeName(p.Name + "/" + name), nil
}

// pvSource and inlineSource are the spec's sources, empty when it is of the other kind.
func pvSource(s volumeSpec) *corev1.PersistentVolumeSource {
	if s.PV == nil {
		return &corev1.PersistentVolumeSource{}
	}
	return &s.PV.Spec.PersistentVolumeSource
}

func inlineSource(s volumeSpec) *corev1.VolumeSource {
	if s.Inline == nil {
		return &corev1.VolumeSource{}
	}
	return &s.Inline.VolumeSource
}
