package pvbinder

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// migratedPlugins are the in-tree plugins whose volumes CSI drivers now provision and delete
// (CSI migration is GA for all of them): their claims and volumes are the driver's.
var migratedPlugins = map[string]string{
	"kubernetes.io/aws-ebs":         "ebs.csi.aws.com",
	"kubernetes.io/gce-pd":          "pd.csi.storage.gke.io",
	"kubernetes.io/azure-disk":      "disk.csi.azure.com",
	"kubernetes.io/azure-file":      "file.csi.azure.com",
	"kubernetes.io/cinder":          "cinder.csi.openstack.org",
	"kubernetes.io/vsphere-volume":  "csi.vsphere.vmware.com",
	"kubernetes.io/portworx-volume": "pxd.portworx.com",
}

// hostPathPlugin is the one in-tree plugin upstream could provision with (only with
// --enable-hostpath-provisioner, for testing) and delete with; kcm has no in-tree plugins.
const hostPathPlugin = "kubernetes.io/host-path"

// provisionerFor is the provisioner a class hands claims to, or the error upstream reports
// when an in-tree ("kubernetes.io/...") provisioner has no plugin.
func provisionerFor(class *storagev1.StorageClass) (string, error) {
	if csi, ok := migratedPlugins[class.Provisioner]; ok {
		return csi, nil
	}
	switch {
	case class.Provisioner == hostPathPlugin:
		return "", fmt.Errorf("Failed to create provisioner: provisioning in volume plugin %q is disabled", hostPathPlugin)
	case strings.HasPrefix(class.Provisioner, "kubernetes.io/"):
		return "", fmt.Errorf("no provisionable volume plugin matched")
	}
	return class.Provisioner, nil
}

// migrationAnnotations keeps pv.kubernetes.io/migrated-to in line with the provisioner a
// claim's storage-provisioner annotation (claim) or a volume's provisioned-by annotation
// names: the CSI driver of a migrated in-tree plugin, absent otherwise. It returns the
// annotations to write and whether they changed.
func migrationAnnotations(ann map[string]string, claim bool) (map[string]string, bool) {
	if ann == nil {
		return ann, false
	}
	var provisioner string
	var ok bool
	if claim {
		if provisioner, ok = ann[AnnStorageProvisioner]; !ok {
			provisioner, ok = ann[AnnBetaStorageProvisioner]
		}
	} else {
		provisioner, ok = ann[AnnDynamicallyProvisioned]
	}
	if !ok {
		return ann, false
	}
	out := maps.Clone(ann)
	if csi, migrated := migratedPlugins[provisioner]; migrated {
		if ann[AnnMigratedTo] == csi {
			return ann, false
		}
		out[AnnMigratedTo] = csi
		return out, true
	}
	if ann[AnnMigratedTo] == "" {
		return ann, false
	}
	delete(out, AnnMigratedTo)
	return out, true
}

// deletionFinalizers is upstream's modifyDeletionFinalizers for a dynamically provisioned
// volume: a migrated volume loses the in-tree finalizer; an in-tree one holds it while its
// policy is Delete and never holds the external provisioner's.
func deletionFinalizers(v *corev1.PersistentVolume) ([]string, bool) {
	provisioner, ok := v.Annotations[AnnDynamicallyProvisioned]
	if !ok {
		return v.Finalizers, false
	}
	out := slices.Clone(v.Finalizers)
	changed := false
	remove := func(f string) {
		if slices.Contains(out, f) {
			out = slices.DeleteFunc(out, func(s string) bool { return s == f })
			changed = true
		}
	}
	if _, migrated := migratedPlugins[provisioner]; migrated {
		remove(FinalizerInTree)
		return out, changed
	}
	if !strings.HasPrefix(provisioner, "kubernetes.io/") {
		return v.Finalizers, false
	}
	switch v.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if !slices.Contains(out, FinalizerInTree) {
			out = append(out, FinalizerInTree)
			changed = true
		}
	case corev1.PersistentVolumeReclaimRetain, corev1.PersistentVolumeReclaimRecycle:
		remove(FinalizerInTree)
	}
	remove(FinalizerExternal)
	return out, changed
}
