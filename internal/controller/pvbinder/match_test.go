package pvbinder

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	rwo  = corev1.ReadWriteOnce
	rox  = corev1.ReadOnlyMany
	rwx  = corev1.ReadWriteMany
	rwop = corev1.ReadWriteOncePod
)

type pvOpt func(*corev1.PersistentVolume)

func pv(name, size string, opts ...pvOpt) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes: []corev1.PersistentVolumeAccessMode{rwo},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func modes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.AccessModes = m }
}
func class(c string) pvOpt { return func(v *corev1.PersistentVolume) { v.Spec.StorageClassName = c } }
func block(v *corev1.PersistentVolume) {
	v.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
}
func labelled(k, val string) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Labels = map[string]string{k: val} }
}
func phase(p corev1.PersistentVolumePhase) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Status.Phase = p }
}
func claimRef(ns, name string, uid types.UID) pvOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: name, UID: uid}
	}
}
func onNode(host string) pvOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{host},
			}}}},
		}}
	}
}
func deleting(v *corev1.PersistentVolume) { v.DeletionTimestamp = ptr.To(metav1.Now()) }

type pvcOpt func(*corev1.PersistentVolumeClaim)

func pvc(size string, opts ...pvcOpt) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim", UID: "claim-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{rwo},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func wants(m ...corev1.PersistentVolumeAccessMode) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}
func ofClass(name string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To(name) }
}
func betaClass(name string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: name}
	}
}
func wantsBlock(c *corev1.PersistentVolumeClaim) {
	c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
}
func selecting(k, v string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}

func TestFindBestMatch(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"kubernetes.io/hostname": "node-a"}}}
	tests := []struct {
		name         string
		claim        *corev1.PersistentVolumeClaim
		volumes      []*corev1.PersistentVolume
		delayBinding bool
		node         *corev1.Node
		want         string
	}{
		{name: "no volumes", claim: pvc("1Gi"), want: ""},
		{name: "smallest fitting capacity", claim: pvc("5Gi"),
			volumes: []*corev1.PersistentVolume{pv("small", "1Gi"), pv("big", "20Gi"), pv("fits", "10Gi"), pv("exact", "5Gi")}, want: "exact"},
		{name: "too small only", claim: pvc("5Gi"), volumes: []*corev1.PersistentVolume{pv("small", "4Gi")}, want: ""},
		{name: "access modes must all be offered", claim: pvc("1Gi", wants(rwx)),
			volumes: []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("rwx", "5Gi", modes(rwo, rwx))}, want: "rwx"},
		{name: "fewest access modes wins over smaller capacity", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("many", "1Gi", modes(rwo, rox, rwx)), pv("one", "10Gi")}, want: "one"},
		{name: "ReadWriteOncePod", claim: pvc("1Gi", wants(rwop)),
			volumes: []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("rwop", "1Gi", modes(rwop))}, want: "rwop"},
		{name: "class must match", claim: pvc("1Gi", ofClass("fast")),
			volumes: []*corev1.PersistentVolume{pv("none", "1Gi"), pv("slow", "1Gi", class("slow")), pv("fast", "2Gi", class("fast"))}, want: "fast"},
		{name: "empty class matches only volumes without class", claim: pvc("1Gi", ofClass("")),
			volumes: []*corev1.PersistentVolume{pv("fast", "1Gi", class("fast")), pv("none", "2Gi")}, want: "none"},
		{name: "nil class matches only volumes without class", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("fast", "1Gi", class("fast"))}, want: ""},
		{name: "beta class annotation wins over spec", claim: pvc("1Gi", ofClass("fast"), betaClass("slow")),
			volumes: []*corev1.PersistentVolume{pv("fast", "1Gi", class("fast")), pv("slow", "1Gi", class("slow"))}, want: "slow"},
		{name: "volume mode must match", claim: pvc("1Gi", wantsBlock),
			volumes: []*corev1.PersistentVolume{pv("fs", "1Gi"), pv("block", "2Gi", block)}, want: "block"},
		{name: "filesystem claim skips block volumes", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("block", "1Gi", block)}, want: ""},
		{name: "selector", claim: pvc("1Gi", selecting("tier", "gold")),
			volumes: []*corev1.PersistentVolume{pv("plain", "1Gi"), pv("silver", "1Gi", labelled("tier", "silver")), pv("gold", "3Gi", labelled("tier", "gold"))}, want: "gold"},
		{name: "only Available volumes", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("released", "1Gi", phase(corev1.VolumeReleased)), pv("pending", "1Gi", phase(corev1.VolumePending))}, want: ""},
		{name: "volumes being deleted are skipped", claim: pvc("1Gi"), volumes: []*corev1.PersistentVolume{pv("gone", "1Gi", deleting)}, want: ""},
		{name: "volumes bound to others are skipped", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("other", "1Gi", claimRef("ns", "other", "")), pv("other-uid", "1Gi", claimRef("ns", "claim", "old-uid"))}, want: ""},
		{name: "pre-bound by name wins over a smaller volume, whatever its phase and class", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("small", "1Gi"), pv("mine", "9Gi", class("x"), phase(corev1.VolumeReleased), claimRef("ns", "claim", ""))}, want: "mine"},
		{name: "pre-bound with UID", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("mine", "9Gi", claimRef("ns", "claim", "claim-uid"))}, want: "mine"},
		{name: "pre-bound but too small", claim: pvc("10Gi"),
			volumes: []*corev1.PersistentVolume{pv("mine", "1Gi", claimRef("ns", "claim", ""))}, want: ""},
		{name: "pre-bound with other access modes is not in a searched group", claim: pvc("1Gi", wants(rwx)),
			volumes: []*corev1.PersistentVolume{pv("mine", "1Gi", claimRef("ns", "claim", ""))}, want: ""},
		{name: "delay binding: unbound volumes wait for the scheduler", claim: pvc("1Gi"), delayBinding: true,
			volumes: []*corev1.PersistentVolume{pv("free", "1Gi")}, want: ""},
		{name: "delay binding: pre-bound volumes still bind", claim: pvc("1Gi"), delayBinding: true,
			volumes: []*corev1.PersistentVolume{pv("free", "1Gi"), pv("mine", "2Gi", claimRef("ns", "claim", ""))}, want: "mine"},
		{name: "selected node: volume whose affinity admits it", claim: pvc("1Gi"), delayBinding: true, node: node,
			volumes: []*corev1.PersistentVolume{pv("elsewhere", "1Gi", onNode("node-b")), pv("here", "2Gi", onNode("node-a")), pv("anywhere", "3Gi")}, want: "here"},
		{name: "selected node: no affinity fits anywhere", claim: pvc("1Gi"), delayBinding: true, node: node,
			volumes: []*corev1.PersistentVolume{pv("elsewhere", "1Gi", onNode("node-b")), pv("anywhere", "3Gi")}, want: "anywhere"},
		{name: "selected node: none fits", claim: pvc("1Gi"), delayBinding: true, node: node,
			volumes: []*corev1.PersistentVolume{pv("elsewhere", "1Gi", onNode("node-b"))}, want: ""},
		{name: "without a selected node, affinity is not checked", claim: pvc("1Gi"),
			volumes: []*corev1.PersistentVolume{pv("elsewhere", "1Gi", onNode("node-b"))}, want: "elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindBestMatch(tt.claim, tt.volumes, tt.delayBinding, tt.node)
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("got %q, want %q", name, tt.want)
			}
		})
	}
}

func TestCheckVolumeSatisfiesClaim(t *testing.T) {
	tests := []struct {
		name  string
		v     *corev1.PersistentVolume
		claim *corev1.PersistentVolumeClaim
		want  string
	}{
		{"fits", pv("v", "2Gi"), pvc("1Gi"), ""},
		{"deleting", pv("v", "2Gi", deleting), pvc("1Gi"), `the volume is marked for deletion "v"`},
		{"small", pv("v", "1Gi"), pvc("2Gi"), "requested PV is too small"},
		{"class", pv("v", "1Gi", class("a")), pvc("1Gi"), "storageClassName does not match"},
		{"mode", pv("v", "1Gi", block), pvc("1Gi"), "incompatible volumeMode"},
		{"access", pv("v", "1Gi"), pvc("1Gi", wants(rwx)), "incompatible accessMode"},
		// A named volume need not be Available nor match the selector.
		{"released, unselected", pv("v", "1Gi", phase(corev1.VolumeReleased)), pvc("1Gi", selecting("a", "b")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := CheckVolumeSatisfiesClaim(tt.v, tt.claim); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultClass(t *testing.T) {
	at := func(name string, age time.Duration, def bool) storagev1.StorageClass {
		c := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1000, 0).Add(-age))}}
		if def {
			c.Annotations = map[string]string{AnnIsDefaultClass: "true"}
		}
		return c
	}
	beta := at("beta", 0, false)
	beta.Annotations = map[string]string{AnnBetaIsDefaultClass: "true"}
	tests := []struct {
		name    string
		classes []storagev1.StorageClass
		want    string
	}{
		{"none", []storagev1.StorageClass{at("a", 0, false)}, ""},
		{"one", []storagev1.StorageClass{at("a", 0, false), at("b", time.Hour, true)}, "b"},
		{"newest", []storagev1.StorageClass{at("old", time.Hour, true), at("new", time.Minute, true)}, "new"},
		{"name on a tie", []storagev1.StorageClass{at("z", time.Hour, true), at("m", time.Hour, true)}, "m"},
		{"beta annotation", []storagev1.StorageClass{beta}, "beta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if c := DefaultClass(tt.classes); c != nil {
				got = c.Name
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFits(t *testing.T) {
	tests := []struct {
		name  string
		v     *corev1.PersistentVolume
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"Available and large enough", pv("v", "2Gi"), pvc("1Gi"), true},
		{"still Pending: the volume sync has not made it Available", pv("v", "2Gi", phase(corev1.VolumePending)), pvc("1Gi"), false},
		{"too small", pv("v", "1Gi"), pvc("2Gi"), false},
		{"missing an access mode", pv("v", "2Gi"), pvc("1Gi", wants(rwx)), false},
		{"another class", pv("v", "2Gi", class("fast")), pvc("1Gi", ofClass("slow")), false},
		{"the same class", pv("v", "2Gi", class("fast")), pvc("1Gi", ofClass("fast")), true},
		{"another volume mode", pv("v", "2Gi"), pvc("1Gi", wantsBlock), false},
		{"selector not matching", pv("v", "2Gi", labelled("tier", "gold")), pvc("1Gi", selecting("tier", "silver")), false},
		{"selector matching", pv("v", "2Gi", labelled("tier", "gold")), pvc("1Gi", selecting("tier", "gold")), true},
		{"being deleted", pv("v", "2Gi", deleting), pvc("1Gi"), false},
		{"the claim names a volume already", pv("v", "2Gi"), pvc("1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "other" }), false},
		{"node affinity is left to the claim sync", pv("v", "2Gi", onNode("node-a")), pvc("1Gi"), true},
	}
	for _, tt := range tests {
		if got := fits(tt.v, tt.claim); got != tt.want {
			t.Errorf("%s: fits = %v, want %v", tt.name, got, tt.want)
		}
	}
}
