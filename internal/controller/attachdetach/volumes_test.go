package attachdetach

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type fakeView struct {
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	drivers map[string]*storagev1.CSIDriver
}

func (f fakeView) claim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return f.claims[ns+"/"+name], nil
}
func (f fakeView) persistentVolume(name string) (*corev1.PersistentVolume, error) {
	return f.volumes[name], nil
}
func (f fakeView) csiDriver(name string) (*storagev1.CSIDriver, error) { return f.drivers[name], nil }

func TestResolve(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}}
	claim := func(name, volume string, uid types.UID, bound bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
		if bound {
			c.Status.Phase = corev1.ClaimBound
		}
		return c
	}
	pv := func(name string, claimUID types.UID, src corev1.PersistentVolumeSource, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src, AccessModes: modes,
				ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: claimUID}}}
	}
	csi := func(driver, handle string) corev1.PersistentVolumeSource {
		return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}
	}
	ephemeralClaim := claim("p-data", "pv1", "c-uid", true)
	ephemeralClaim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid", Controller: ptr.To(true)}}
	view := fakeView{
		claims: map[string]*corev1.PersistentVolumeClaim{
			"ns/c":        claim("c", "pv1", "c-uid", true),
			"ns/unbound":  claim("unbound", "", "u-uid", false),
			"ns/wronguid": claim("wronguid", "pv1", "other", true),
			"ns/rwx":      claim("rwx", "pvx", "c-uid", true),
			"ns/noattach": claim("noattach", "pvn", "c-uid", true),
			"ns/gce":      claim("gce", "pvg", "c-uid", true),
			"ns/nfs":      claim("nfs", "pvnfs", "c-uid", true),
			"ns/p-data":   ephemeralClaim,
			"ns/p-other":  claim("p-other", "pv1", "c-uid", true),
		},
		volumes: map[string]*corev1.PersistentVolume{
			"pv1": pv("pv1", "c-uid", csi("csi.example.com", "h1"), corev1.ReadWriteOnce),
			"pvx": pv("pvx", "c-uid", csi("csi.example.com", "hx"), corev1.ReadWriteMany),
			"pvn": pv("pvn", "c-uid", csi("noattach.example.com", "hn"), corev1.ReadWriteOnce),
			"pvg": pv("pvg", "c-uid", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "disk1"}},
				corev1.ReadWriteOnce),
			"pvnfs": pv("pvnfs", "c-uid", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}),
		},
		drivers: map[string]*storagev1.CSIDriver{
			"noattach.example.com": {ObjectMeta: metav1.ObjectMeta{Name: "noattach.example.com"},
				Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}},
			"csi.example.com": {ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
				Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}},
		},
	}
	claimVol := func(name string) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	cases := []struct {
		name      string
		vol       corev1.Volume
		want      *volume
		notAttach bool
		err       bool
	}{
		{name: "claim bound to a CSI volume", vol: claimVol("c"),
			want: &volume{UniqueName: "kubernetes.io/csi/csi.example.com^h1", Driver: "csi.example.com", Handle: "h1", SpecName: "pv1", PVName: "pv1"}},
		{name: "ReadWriteMany volume may be attached to several nodes", vol: claimVol("rwx"),
			want: &volume{UniqueName: "kubernetes.io/csi/csi.example.com^hx", Driver: "csi.example.com", Handle: "hx", SpecName: "pvx", PVName: "pvx", MultiAttach: true}},
		{name: "unbound claim", vol: claimVol("unbound"), err: true},
		{name: "missing claim", vol: claimVol("missing"), err: true},
		{name: "volume bound to another claim", vol: claimVol("wronguid"), err: true},
		{name: "driver with attachRequired false", vol: claimVol("noattach"), notAttach: true},
		{name: "in-tree GCE PD migrated to pd.csi.storage.gke.io", vol: claimVol("gce"),
			want: &volume{UniqueName: "kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk1",
				Driver: "pd.csi.storage.gke.io", Handle: "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk1", SpecName: "pvg", PVName: "pvg"}},
		{name: "NFS is not attached", vol: claimVol("nfs"), notAttach: true},
		{name: "inline CSI volume is ephemeral", vol: corev1.Volume{Name: "i", VolumeSource: corev1.VolumeSource{
			CSI: &corev1.CSIVolumeSource{Driver: "csi.example.com"}}}, notAttach: true},
		{name: "emptyDir", vol: corev1.Volume{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, notAttach: true},
		{name: "generic ephemeral volume owned by the pod", vol: corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{}}},
			want: &volume{UniqueName: "kubernetes.io/csi/csi.example.com^h1", Driver: "csi.example.com", Handle: "h1", SpecName: "pv1", PVName: "pv1"}},
		{name: "generic ephemeral volume's claim not owned by the pod", vol: corev1.Volume{Name: "other", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{}}}, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := resolve(view, pod, &c.vol)
			switch {
			case c.notAttach:
				if !errors.Is(err, errNotAttachable) {
					t.Fatalf("got %v, %v; want not attachable", got, err)
				}
			case c.err:
				if err == nil || errors.Is(err, errNotAttachable) {
					t.Fatalf("got %v, %v; want an error", got, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if *got != *c.want {
					t.Errorf("got  %+v\nwant %+v", *got, *c.want)
				}
			}
		})
	}
}

func TestResolveInlineMigrated(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	vol := corev1.Volume{Name: "ebs", VolumeSource: corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}
	got, err := resolve(fakeView{}, pod, &vol)
	if err != nil {
		t.Fatal(err)
	}
	if got.Driver != "ebs.csi.aws.com" || got.Handle != "vol-1" || got.PVName != "" || got.Inline == nil ||
		got.Inline.CSI == nil || got.Inline.CSI.VolumeHandle != "vol-1" {
		t.Errorf("got %+v", got)
	}
	if got.UniqueName != "kubernetes.io/csi/ebs.csi.aws.com^vol-1" || got.MultiAttach {
		t.Errorf("name %s, multi-attach %v", got.UniqueName, got.MultiAttach)
	}
}

func TestResolveISCSIAndFC(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	view := fakeView{
		claims: map[string]*corev1.PersistentVolumeClaim{"ns/c": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}},
		volumes: map[string]*corev1.PersistentVolume{"pv": {ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{UID: "u"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{
				TargetPortal: "10.0.0.1:3260", IQN: "iqn.2026-01.com.example:t", Lun: 3}}}}},
	}
	cases := []struct {
		name string
		vol  corev1.VolumeSource
		want volume
	}{
		{"iSCSI volume of a claim", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
			volume{UniqueName: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-01.com.example:t:3", SpecName: "pv", PVName: "pv", StatusOnly: true}},
		{"inline iSCSI", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.2", IQN: "iqn.x", Lun: 0}},
			volume{UniqueName: "kubernetes.io/iscsi/10.0.0.2:iqn.x:0", SpecName: "v", MultiAttach: true, StatusOnly: true}},
		{"inline FC by WWNs and LUN", corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"500a", "500b"}, Lun: ptr.To[int32](1)}},
			volume{UniqueName: "kubernetes.io/fc/[500a 500b]:1", SpecName: "v", MultiAttach: true, StatusOnly: true}},
		{"inline FC by WWIDs", corev1.VolumeSource{FC: &corev1.FCVolumeSource{WWIDs: []string{"3600"}}},
			volume{UniqueName: "kubernetes.io/fc/[3600]", SpecName: "v", MultiAttach: true, StatusOnly: true}},
	}
	for _, c := range cases {
		got, err := resolve(view, pod, &corev1.Volume{Name: "v", VolumeSource: c.vol})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if *got != c.want {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.name, *got, c.want)
		}
	}
	if got := pluginOf("kubernetes.io/iscsi/10.0.0.2:iqn.x:0"); got != "kubernetes.io/iscsi" {
		t.Errorf("pluginOf = %s", got)
	}
	if got := pluginOf(uniqueName("d.example.com", "h")); got != "kubernetes.io/csi:d.example.com" {
		t.Errorf("pluginOf = %s", got)
	}
}

func TestPodNeedsVolumes(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	now := metav1.Now()
	cases := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"unscheduled", corev1.Pod{}, false},
		{"scheduled", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}, true},
		{"succeeded", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		{"failed", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}, false},
		{"deleted, container running", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running}}}, true},
		{"deleted, nothing running", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: corev1.PodSpec{NodeName: "n"}}, false},
	}
	for _, c := range cases {
		if got := podNeedsVolumes(&c.pod); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
