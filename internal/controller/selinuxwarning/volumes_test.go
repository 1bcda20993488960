package selinuxwarning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
)

func TestPluginAndUniqueName(t *testing.T) {
	lun := int32(3)
	pv := func(src corev1.PersistentVolumeSource) volumeSpec {
		return volumeSpec{PV: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src}}}
	}
	inline := func(src corev1.VolumeSource) volumeSpec {
		return volumeSpec{Inline: &corev1.Volume{Name: "vol", VolumeSource: src}}
	}
	for _, tc := range []struct {
		name    string
		spec    volumeSpec
		want    plugin
		unique  corev1.UniqueVolumeName
		nameErr bool
	}{
		{name: "CSI PV: driver^handle", spec: pv(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "rwx.example.com", VolumeHandle: "h-1"}}),
			want: plugin{Name: pluginCSI, CSIDriver: "rwx.example.com"}, unique: "kubernetes.io/csi/rwx.example.com^h-1"},
		{name: "inline CSI: its driver decides, but it has no unique name", spec: inline(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "inline.example.com"}}),
			want: plugin{Name: pluginCSI, CSIDriver: "inline.example.com"}, nameErr: true},
		{name: "iSCSI PV", spec: pv(corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:disk", Lun: 2}}),
			want: plugin{Name: pluginISCSI, SupportsMount: true}, unique: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.2001-04.com.example:disk:2"},
		{name: "inline iSCSI names the same storage alike", spec: inline(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:disk", Lun: 2}}),
			want: plugin{Name: pluginISCSI, SupportsMount: true}, unique: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.2001-04.com.example:disk:2"},
		{name: "FC by target WWNs and LUN", spec: inline(corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"500a0981891b8dc5", "500a0981991b8dc5"}, Lun: &lun}}),
			want: plugin{Name: pluginFC, SupportsMount: true}, unique: "kubernetes.io/fc/[500a0981891b8dc5 500a0981991b8dc5]:3"},
		{name: "FC by WWIDs", spec: pv(corev1.PersistentVolumeSource{FC: &corev1.FCVolumeSource{WWIDs: []string{"3600508b400105e210000900000490000"}}}),
			want: plugin{Name: pluginFC, SupportsMount: true}, unique: "kubernetes.io/fc/[3600508b400105e210000900000490000]"},
		{name: "FC without either has no name", spec: inline(corev1.VolumeSource{FC: &corev1.FCVolumeSource{}}),
			want: plugin{Name: pluginFC, SupportsMount: true}, nameErr: true},
		{name: "NFS: never mounted with a context", spec: pv(corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/export"}}),
			want: plugin{Name: pluginNFS}, unique: "kubernetes.io/nfs/nfs.example.com//export"},
		{name: "hostPath: never mounted with a context", spec: inline(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}),
			want: plugin{Name: pluginHostPath}, unique: "kubernetes.io/host-path//data"},
		{name: "emptyDir: no plugin", spec: inline(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}), want: plugin{}},
		{name: "configMap: no plugin", spec: inline(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}), want: plugin{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pluginOf(tc.spec)
			if got != tc.want {
				t.Fatalf("pluginOf = %+v, want %+v", got, tc.want)
			}
			if got.Name == "" {
				return
			}
			name, err := uniqueName(got, tc.spec)
			if tc.nameErr != (err != nil) {
				t.Fatalf("uniqueName error %v, want one: %t", err, tc.nameErr)
			}
			if name != tc.unique {
				t.Errorf("uniqueName = %q, want %q", name, tc.unique)
			}
		})
	}
}

// In-tree volumes whose plugins moved to CSI are named as their drivers' volumes, so a PV
// and an inline volume of the same disk meet, as upstream (csi-translation-lib).
func TestMigratedVolumes(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	ebsPV := volumeSpec{PV: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "ebs"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0123"}}}}}
	ebsInline := volumeSpec{Inline: &corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0123"}}}}
	var names []corev1.UniqueVolumeName
	for _, s := range []volumeSpec{ebsPV, ebsInline} {
		m, err := migrated(logger, s, "ns")
		if err != nil {
			t.Fatal(err)
		}
		p := pluginOf(m)
		if p.Name != pluginCSI || p.CSIDriver != "ebs.csi.aws.com" {
			t.Fatalf("migrated %s: plugin %+v, want CSI of ebs.csi.aws.com", s.Name(), p)
		}
		n, err := uniqueName(p, m)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if names[0] != names[1] || names[0] != "kubernetes.io/csi/ebs.csi.aws.com^vol-0123" {
		t.Errorf("names %v, want both kubernetes.io/csi/ebs.csi.aws.com^vol-0123", names)
	}

	iscsi := volumeSpec{Inline: &corev1.Volume{Name: "lun", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "p", IQN: "i"}}}}
	if m, err := migrated(logger, iscsi, "ns"); err != nil || m != iscsi {
		t.Errorf("a volume of a plugin not migrated must stay as it is: %+v, %v", m, err)
	}
}
