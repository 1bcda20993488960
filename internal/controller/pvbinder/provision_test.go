package pvbinder

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func TestProvisionerFor(t *testing.T) {
	tests := []struct{ provisioner, want, err string }{
		{"csi.example.com", "csi.example.com", ""},
		{"example.com/nfs", "example.com/nfs", ""},
		{"kubernetes.io/gce-pd", "pd.csi.storage.gke.io", ""},
		{"kubernetes.io/aws-ebs", "ebs.csi.aws.com", ""},
		{"kubernetes.io/no-provisioner", "", "no provisionable volume plugin matched"},
		{"kubernetes.io/host-path", "", `Failed to create provisioner: provisioning in volume plugin "kubernetes.io/host-path" is disabled`},
	}
	for _, tt := range tests {
		got, err := provisionerFor(&storagev1.StorageClass{Provisioner: tt.provisioner})
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.err {
			t.Errorf("%s: got %q, %q; want %q, %q", tt.provisioner, got, gotErr, tt.want, tt.err)
		}
	}
}

func TestMigrationAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		claim   bool
		want    map[string]string
		changed bool
	}{
		{"none", nil, true, nil, false},
		{"claim of a migrated plugin", map[string]string{AnnStorageProvisioner: "kubernetes.io/cinder"}, true,
			map[string]string{AnnStorageProvisioner: "kubernetes.io/cinder", AnnMigratedTo: "cinder.csi.openstack.org"}, true},
		{"claim by the beta annotation", map[string]string{AnnBetaStorageProvisioner: "kubernetes.io/gce-pd"}, true,
			map[string]string{AnnBetaStorageProvisioner: "kubernetes.io/gce-pd", AnnMigratedTo: "pd.csi.storage.gke.io"}, true},
		{"already set", map[string]string{AnnStorageProvisioner: "kubernetes.io/cinder", AnnMigratedTo: "cinder.csi.openstack.org"}, true,
			map[string]string{AnnStorageProvisioner: "kubernetes.io/cinder", AnnMigratedTo: "cinder.csi.openstack.org"}, false},
		{"stale migrated-to removed", map[string]string{AnnStorageProvisioner: "csi.example.com", AnnMigratedTo: "x"}, true,
			map[string]string{AnnStorageProvisioner: "csi.example.com"}, true},
		{"volume by provisioned-by", map[string]string{AnnDynamicallyProvisioned: "kubernetes.io/azure-disk"}, false,
			map[string]string{AnnDynamicallyProvisioned: "kubernetes.io/azure-disk", AnnMigratedTo: "disk.csi.azure.com"}, true},
		{"volume ignores claim annotations", map[string]string{AnnStorageProvisioner: "kubernetes.io/azure-disk"}, false,
			map[string]string{AnnStorageProvisioner: "kubernetes.io/azure-disk"}, false},
	}
	for _, tt := range tests {
		got, changed := migrationAnnotations(tt.in, tt.claim)
		if !reflect.DeepEqual(got, tt.want) || changed != tt.changed {
			t.Errorf("%s: got %v %v, want %v %v", tt.name, got, changed, tt.want, tt.changed)
		}
	}
}

func TestDeletionFinalizers(t *testing.T) {
	vol := func(provisioner string, policy corev1.PersistentVolumeReclaimPolicy, finalizers ...string) *corev1.PersistentVolume {
		v := pv("v", "1Gi")
		if provisioner != "" {
			v.Annotations = map[string]string{AnnDynamicallyProvisioned: provisioner}
		}
		v.Spec.PersistentVolumeReclaimPolicy = policy
		v.Finalizers = finalizers
		return v
	}
	tests := []struct {
		name    string
		v       *corev1.PersistentVolume
		want    []string
		changed bool
	}{
		{"not provisioned", vol("", corev1.PersistentVolumeReclaimDelete), nil, false},
		{"external", vol("csi.example.com", corev1.PersistentVolumeReclaimDelete, FinalizerExternal), []string{FinalizerExternal}, false},
		{"in-tree Delete gains the finalizer", vol("kubernetes.io/host-path", corev1.PersistentVolumeReclaimDelete), []string{FinalizerInTree}, true},
		{"in-tree Retain loses it", vol("kubernetes.io/host-path", corev1.PersistentVolumeReclaimRetain, FinalizerInTree, "x"), []string{"x"}, true},
		{"in-tree drops the external one", vol("kubernetes.io/host-path", corev1.PersistentVolumeReclaimDelete, FinalizerInTree, FinalizerExternal), []string{FinalizerInTree}, true},
		{"migrated loses the in-tree one", vol("kubernetes.io/aws-ebs", corev1.PersistentVolumeReclaimDelete, FinalizerInTree, FinalizerExternal), []string{FinalizerExternal}, true},
	}
	for _, tt := range tests {
		got, changed := deletionFinalizers(tt.v)
		if !reflect.DeepEqual(got, tt.want) || changed != tt.changed {
			t.Errorf("%s: got %v %v, want %v %v", tt.name, got, changed, tt.want, tt.changed)
		}
	}
}
