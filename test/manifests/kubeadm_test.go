package manifests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var _ = Describe("config/kubeadm, kcm's static pod for kubeadm clusters", func() {
	It("has testdata that kubeadm's own code renders today", func() {
		// hack/tools/k8s is the one module that may import k8s.io/kubernetes; make k8s-bins
		// builds from it, so its modules are here already (about a minute to compile cold).
		cmd := exec.Command("go", "run", "./cmd/kubeadm-manifest")
		cmd.Dir = filepath.Join(root, "hack/tools/k8s")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		rendered, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), "kubeadm-manifest:\n%s", stderr.String())
		testdata, err := os.ReadFile(filepath.Join(root, "config/kubeadm/testdata/kubeadm-kube-controller-manager.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(rendered)).To(Equal(string(testdata)), "run make kubeadm-manifest, then bring config/kubeadm/kube-controller-manager.yaml along")
	})

	It("is kubeadm's own manifest but for image, command[0] and running as root", func() {
		// testdata is what hack/tools/k8s/cmd/kubeadm-manifest renders from kubeadm's code
		// (make kubeadm-manifest).
		theirs := readPod(filepath.Join(root, "config/kubeadm/testdata/kubeadm-kube-controller-manager.yaml"))
		ours := readPod(filepath.Join(root, "config/kubeadm/kube-controller-manager.yaml"))

		Expect(ours.Spec.Containers).To(HaveLen(1))
		c := &ours.Spec.Containers[0]
		Expect(c.Image).To(Equal("kcm"))
		Expect(c.Command[0]).To(Equal("/kcm"))
		// kcm's image sets USER 65532; kubeadm's files are root's only.
		zero := int64(0)
		Expect(c.SecurityContext).To(Equal(&corev1.SecurityContext{RunAsUser: &zero, RunAsGroup: &zero}))

		// Put kubeadm's image, command and (absent) container security context back: the
		// rest must be kubeadm's, flag for flag, volume for volume.
		tc := theirs.Spec.Containers[0]
		c.Image, c.Command[0], c.SecurityContext = tc.Image, tc.Command[0], tc.SecurityContext
		Expect(ours).To(Equal(theirs))
	})
})

// readPod reads a pod manifest strictly: a misspelt field fails rather than vanishes.
func readPod(path string) *corev1.Pod {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{}
	Expect(yaml.UnmarshalStrict(data, pod)).To(Succeed(), "%s", path)
	return pod
}
