package pvbinder

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagehelpers "k8s.io/component-helpers/storage/volume"
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

// provision hands the claim to its class's provisioner: the storage-provisioner
// annotations name it and an ExternalProvisioning Event says what the claim waits for, on
// every sync as upstream. kcm provisions nothing itself.
func (r *claimReconciler) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	if !r.DynamicProvisioning {
		return nil
	}
	if class == nil {
		// Worded as upstream's lister reports it (singular resource).
		err := apierrors.NewNotFound(schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclass"}, storagehelpers.GetPersistentVolumeClaimClass(claim))
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonProvisioningFailed, "Provisioning", err.Error())
		return nil
	}
	provisioner, err := provisionerFor(class)
	if class.Provisioner == hostPathPlugin {
		// Upstream finds the plugin, times the provision and names the plugin on the claim
		// before it refuses: an error of the plugin's provision.
		r.operations.start(claimKey(claim), hostPathPlugin, "provision")
		if serr := r.setClaimProvisioner(ctx, claim, class.Provisioner); serr != nil {
			r.operations.record(claimKey(claim), serr)
			return serr
		}
		r.operations.record(claimKey(claim), err)
	}
	if err != nil {
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonProvisioningFailed, "Provisioning", err.Error())
		return nil
	}
	// The provision is timed until the claim is bound.
	r.operations.start(claimKey(claim), provisioner, "provision")
	if err := r.setClaimProvisioner(ctx, claim, provisioner); err != nil {
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonProvisioningFailed, "Provisioning", "Error saving claim: %v", err)
		r.operations.record(claimKey(claim), err)
		return err
	}
	r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, ReasonExternalProvisioning, "Provisioning",
		"Waiting for a volume to be created either by the external provisioner '%s' "+
			"or manually by the system administrator. If volume creation is delayed, please verify that "+
			"the provisioner is running and correctly registered.", provisioner)
	return nil
}

// setClaimProvisioner names the provisioner in both storage-provisioner annotations.
func (r *claimReconciler) setClaimProvisioner(ctx context.Context, claim *corev1.PersistentVolumeClaim, provisioner string) error {
	if claim.Annotations[AnnStorageProvisioner] == provisioner {
		return nil
	}
	clone := claim.DeepCopy()
	if clone.Annotations == nil {
		clone.Annotations = map[string]string{}
	}
	clone.Annotations[AnnBetaStorageProvisioner] = provisioner
	clone.Annotations[AnnStorageProvisioner] = provisioner
	clone.Annotations, _ = migrationAnnotations(clone.Annotations, true)
	if err := r.Client.Update(ctx, clone); err != nil {
		return err
	}
	*claim = *clone
	return nil
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
