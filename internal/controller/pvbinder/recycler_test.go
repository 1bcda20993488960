package pvbinder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func sized(size string, src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		PersistentVolumeSource: src,
	}}
	v.Name = "pv-1"
	return v
}

func TestRecyclerTimeout(t *testing.T) {
	for _, tc := range []struct {
		size               string
		minimum, increment int64
		want               int64
	}{
		{"1Gi", 60, 30, 60},
		{"2Gi", 60, 30, 60},
		{"3Gi", 60, 30, 90},
		{"20Gi", 300, 30, 600},
		{"1500Mi", 10, 20, 20}, // whole GiB only, as upstream's integer division
		{"100Mi", 300, 30, 300},
		{"1Ti", 300, 30, 30720},
	} {
		if got := recyclerTimeout(tc.minimum, tc.increment, sized(tc.size, corev1.PersistentVolumeSource{})); got != tc.want {
			t.Errorf("recyclerTimeout(%d, %d, %s) = %d, want %d", tc.minimum, tc.increment, tc.size, got, tc.want)
		}
	}
}

func TestRecyclerPod(t *testing.T) {
	rs := &Recyclers{
		NFS:      Recycler{Template: DefaultRecyclerPodTemplate(), MinimumTimeout: 300, TimeoutIncrement: 30},
		HostPath: Recycler{Template: DefaultRecyclerPodTemplate(), MinimumTimeout: 60, TimeoutIncrement: 30},
	}
	nfs := rs.recyclerPod(sized("1Gi", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/p", ReadOnly: true}}))
	if nfs == nil || nfs.Name != "recycler-for-pv-1" || nfs.GenerateName != "" || nfs.Namespace != "default" ||
		*nfs.Spec.ActiveDeadlineSeconds != 300 || *nfs.Spec.Volumes[0].NFS != (corev1.NFSVolumeSource{Server: "s", Path: "/p"}) {
		t.Errorf("NFS recycler pod: %+v", nfs)
	}
	host := rs.recyclerPod(sized("1Gi", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}))
	if host == nil || *host.Spec.ActiveDeadlineSeconds != 60 || host.Spec.Volumes[0].HostPath.Path != "/data" || host.Spec.Volumes[0].NFS != nil {
		t.Errorf("hostPath recycler pod: %+v", host)
	}
	for name, src := range map[string]corev1.PersistentVolumeSource{
		"CSI":   {CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}},
		"local": {Local: &corev1.LocalVolumeSource{Path: "/mnt"}},
		"iSCSI": {ISCSI: &corev1.ISCSIPersistentVolumeSource{TargetPortal: "t", IQN: "i"}},
	} {
		if p := rs.recyclerPod(sized("1Gi", src)); p != nil {
			t.Errorf("%s: a recycler pod for a source with no recycler plugin: %+v", name, p)
		}
	}
	if rs.NFS.Template.Name != "" || *rs.NFS.Template.Spec.ActiveDeadlineSeconds != 60 || rs.NFS.Template.Spec.Volumes[0].NFS != nil {
		t.Errorf("the template was changed: %+v", rs.NFS.Template)
	}
}

func TestLoadRecyclerPodTemplate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: scrub\nspec:\n  volumes:\n  - name: v\n  containers:\n  - name: c\n    image: x\n")
	if p, err := LoadRecyclerPodTemplate(good); err != nil || p.Namespace != "scrub" || p.Spec.Volumes[0].Name != "v" {
		t.Errorf("good template: %+v, %v", p, err)
	}
	if p, err := LoadRecyclerPodTemplate(""); err != nil || p.Spec.Containers[0].Image != "registry.k8s.io/build-image/debian-base:bookworm-v1.0.6" {
		t.Errorf("no path: %+v, %v", p, err)
	}
	for name, tc := range map[string]struct{ path, want string }{
		"missing":    {filepath.Join(dir, "none.yaml"), "failed to read file path " + filepath.Join(dir, "none.yaml")},
		"empty":      {write("empty.yaml", ""), "file was empty: "},
		"not a pod":  {write("junk.yaml", "{{"), "failed decoding file: "},
		"no volumes": {write("novol.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n"), "): does not contain any volume(s)"},
	} {
		if _, err := LoadRecyclerPodTemplate(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, tc.want)
		}
	}
}

func TestRecyclerOutcome(t *testing.T) {
	for _, tc := range []struct {
		phase   corev1.PodPhase
		message string
		done    bool
		err     string
	}{
		{corev1.PodPending, "", false, ""},
		{corev1.PodRunning, "", false, ""},
		{corev1.PodSucceeded, "", true, ""},
		{corev1.PodFailed, "Pod was active on the node longer than the specified deadline", true, "Pod was active on the node longer than the specified deadline"},
		{corev1.PodFailed, "", true, "pod failed, pod.Status.Message unknown"},
	} {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: tc.phase, Message: tc.message}}
		done, err := recyclerOutcome(p)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if done != tc.done || got != tc.err {
			t.Errorf("%s %q: %v %q, want %v %q", tc.phase, tc.message, done, got, tc.done, tc.err)
		}
	}
}
