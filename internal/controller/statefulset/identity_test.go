package statefulset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParentAndOrdinal(t *testing.T) {
	tests := []struct {
		name       string
		wantParent string
		wantOrd    int
	}{
		{"web-0", "web", 0},
		{"my-web-12", "my-web", 12},
		{"web", "", -1},
		{"web-x", "", -1},
		{"web-99999999999", "web", -1},
	}
	for _, tt := range tests {
		p, o := parentAndOrdinal(tt.name)
		if p != tt.wantParent || o != tt.wantOrd {
			t.Errorf("parentAndOrdinal(%q) = %q, %d; want %q, %d", tt.name, p, o, tt.wantParent, tt.wantOrd)
		}
	}
}

func TestNewPod(t *testing.T) {
	set := testSet(3)
	set.Spec.ServiceName = "svc"
	set.Spec.Template.Labels = map[string]string{"app": "web"}
	set.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "www"}, {Name: "config"}}
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}}
	p := newPod(set, set, 2, "web-abc")
	if p.Name != "web-2" || p.Namespace != "ns" || p.Spec.Hostname != "web-2" || p.Spec.Subdomain != "svc" {
		t.Errorf("identity: %s/%s host %s sub %s", p.Namespace, p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	if p.GenerateName != "web-" {
		t.Errorf("generateName %q, want %q", p.GenerateName, "web-")
	}
	for k, v := range map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-2",
		appsv1.PodIndexLabel: "2", appsv1.ControllerRevisionHashLabelKey: "web-abc"} {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	if set.Spec.Template.Labels[appsv1.StatefulSetPodNameLabel] != "" {
		t.Error("template labels mutated")
	}
	if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "www-web-2" || p.Spec.Volumes[1].Name != "config" {
		t.Errorf("volumes %+v", p.Spec.Volumes)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "StatefulSet" || ref.UID != set.UID {
		t.Errorf("controller %+v", ref)
	}
	if !identityMatches(set, p) {
		t.Error("new pod's identity does not match")
	}
	claims := newClaims(set, 2)
	if len(claims) != 1 || claims[0].Name != "www-web-2" || claims[0].Labels["app"] != "web" {
		t.Errorf("claims %+v", claims)
	}
}

func TestGenerateName(t *testing.T) {
	long := strings.Repeat("a", 253)
	for name, want := range map[string]string{
		"web": "web-",
		// A prefix is validated with its dash masked (the generated suffix follows it), so
		// the longest set name still gets the dash, as upstream's.
		long: long + "-",
		// A name no prefix could be valid for keeps its own, as upstream falls back.
		"Web": "Web",
	} {
		set := testSet(1)
		set.Name = name
		if got := generateName(set); got != want {
			t.Errorf("generateName(%d characters) = %q, want %q", len(name), got, want)
		}
	}
}

func TestClaimOwnerRefs(t *testing.T) {
	const retain, del = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	setRef := metav1.NewControllerRef(testSet(1), setGVK)
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "x", Controller: ptr.To(true)}
	tests := []struct {
		name            string
		scaled, deleted appsv1.PersistentVolumeClaimRetentionPolicyType
		ordinal         int
		existing        []metav1.OwnerReference
		want            string
		wantOK          bool
	}{
		{"retain keeps no refs of ours", retain, retain, 0, []metav1.OwnerReference{*setRef}, "", true},
		{"whenDeleted: set controls in range", retain, del, 0, nil, "StatefulSet", true},
		{"whenDeleted: set controls out of range too", retain, del, 3, nil, "StatefulSet", true},
		{"whenScaled: nothing in range", del, retain, 0, nil, "", true},
		{"whenScaled: pod controls out of range", del, retain, 3, nil, "Pod", true},
		{"both: pod out of range replaces the set", del, del, 3, []metav1.OwnerReference{*setRef}, "Pod", true},
		{"both: set in range", del, del, 0, nil, "StatefulSet", true},
		{"another controller: left alone", del, del, 0, []metav1.OwnerReference{other}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := testSet(1)
			set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: tt.scaled, WhenDeleted: tt.deleted}
			p := testPod(tt.ordinal, "R", "a")
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tt.existing}}
			refs, ok := claimOwnerRefs(set, p, claim)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v", ok)
			}
			var kinds []string
			for _, r := range refs {
				kinds = append(kinds, r.Kind)
			}
			if ok && strings.Join(kinds, ",") != tt.want {
				t.Errorf("refs %v, want %q", kinds, tt.want)
			}
		})
	}
}

func TestRevisionData(t *testing.T) {
	set := testSet(1)
	set.Spec.Template.Labels = map[string]string{"app": "web"}
	set.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "pause"}}
	data, err := revisionData(set)
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's shape: only spec.template, replaced whole, keys sorted.
	want := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"pause","name":"app","resources":{}}]}}}}`
	if string(data) != want {
		t.Errorf("revisionData =\n%s\nwant\n%s", data, want)
	}
	rev, err := newRevision(set, 1, ptr.To[int32](0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rev.Name, "web-") || rev.Labels["app"] != "web" {
		t.Errorf("revision %s labels %v", rev.Name, rev.Labels)
	}
	changed := set.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "other"
	back, err := applyRevision(changed, rev)
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.Template.Spec.Containers[0].Image != "pause" || changed.Spec.Template.Spec.Containers[0].Image != "other" {
		t.Errorf("applyRevision gave image %q", back.Spec.Template.Spec.Containers[0].Image)
	}
}
