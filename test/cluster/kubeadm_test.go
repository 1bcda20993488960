//go:build linux

package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/testenv"
)

// nodeWith is a cluster whose node has the files (node paths), empty.
func nodeWith(t *testing.T, files ...string) *Cluster {
	t.Helper()
	c := &Cluster{Dir: t.TempDir()}
	for _, f := range files {
		path := c.NodePath(f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// kubeadmFiles are the node files kubeadm's kube-controller-manager flags name.
var kubeadmFiles = []string{
	"/etc/kubernetes/controller-manager.conf",
	"/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/ca.key",
	"/etc/kubernetes/pki/sa.key", "/etc/kubernetes/pki/front-proxy-ca.crt",
}

func TestStaticPodArgsOnTheNodeFiles(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pod, err := ReadPod(filepath.Join(root, StaticPodManifest))
	if err != nil {
		t.Fatal(err)
	}
	c := nodeWith(t, kubeadmFiles...)
	args, err := c.PodArgs(&pod.Spec, "kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 17 || slices.Contains(args, "/kcm") {
		t.Fatalf("kubeadm's 17 flags, without the binary, expected: %q", args)
	}
	for _, want := range []string{
		"--kubeconfig=" + c.NodePath("/etc/kubernetes/controller-manager.conf"),
		"--root-ca-file=" + c.NodePath("/etc/kubernetes/pki/ca.crt"),
		"--cluster-signing-key-file=" + c.NodePath("/etc/kubernetes/pki/ca.key"),
		"--use-service-account-credentials=true",
		"--controllers=*,bootstrapsigner,tokencleaner",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("%s missing: %q", want, args)
		}
	}

	// A node without sa.key: the static pod's kcm could not read its flag's file.
	c = nodeWith(t, slices.DeleteFunc(slices.Clone(kubeadmFiles), func(f string) bool { return strings.HasSuffix(f, "sa.key") })...)
	if _, err := c.PodArgs(&pod.Spec, "kube-controller-manager"); err == nil || !strings.Contains(err.Error(), "--service-account-private-key-file") {
		t.Errorf("a missing sa.key should fail naming its flag, got %v", err)
	}
}

func TestPodArgsMapsMountsOntoTheNode(t *testing.T) {
	c := nodeWith(t, "/host/dir/a.crt", "/host/file.conf")
	spec := &corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:    "c",
			Command: []string{"/bin", "--a=/in/dir/a.crt"},
			Args:    []string{"--conf=/in/file.conf", "--plain=value", "--flag"},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "dir", MountPath: "/in/dir"},
				{Name: "file", MountPath: "/in/file.conf"},
				{Name: "cm", MountPath: "/in/cm"},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/host/dir"}}},
			{Name: "file", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/host/file.conf"}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		},
	}
	args, err := c.PodArgs(spec, "c")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--a=" + c.NodePath("/host/dir/a.crt"), "--conf=" + c.NodePath("/host/file.conf"), "--plain=value", "--flag"}
	if !slices.Equal(args, want) {
		t.Errorf("got %q, want %q", args, want)
	}

	for arg, reason := range map[string]string{
		"--x=/in/dirt/a.crt": "no volume mount gives", // a sibling of a mount path is not under it
		"--x=/in/dir/b.crt":  "the node has no /host/dir/b.crt",
		"--x=/in/cm/key":     "which is no hostPath volume",
	} {
		spec.Containers[0].Args = []string{arg}
		if _, err := c.PodArgs(spec, "c"); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: want an error saying %q, got %v", arg, reason, err)
		}
	}
}

func TestKubeadmArgsOverrides(t *testing.T) {
	c := &Cluster{kubeadmArgs: []string{"--controllers=*,bootstrapsigner,tokencleaner", "--leader-elect=true", "--kubeconfig=/k"}}
	got := c.KubeadmArgs("--controllers=deployment-controller", "--leader-elect=false", "--secure-port=1234")
	want := []string{"--controllers=deployment-controller", "--leader-elect=false", "--kubeconfig=/k", "--secure-port=1234"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q: two flags replaced and one added", got, want)
	}
	// Given twice, --controllers would append to kubeadm's list rather than replace it; the
	// base is left as it was.
	if c.kubeadmArgs[0] != "--controllers=*,bootstrapsigner,tokencleaner" {
		t.Errorf("KubeadmArgs changed the cluster's base: %q", c.kubeadmArgs)
	}
}
