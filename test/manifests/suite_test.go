// Package manifests_test checks kcm's deployment manifests: that config/default builds with
// kustomize into what a control plane needs, that the real kube-apiserver accepts it, and that
// it gives kcm exactly the API server's built-in system:kube-controller-manager role.
package manifests_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// root is the repository root; kubectl runs from there.
	root string
	// kubectl is the kubectl next to kube-apiserver in KUBEBUILDER_ASSETS.
	kubectl string
	// kubeconfig reaches the suite's API server as an administrator.
	kubeconfig string
)

func TestManifests(t *testing.T) {
	testenv.RunSuite(t, "manifests suite")
}

var _ = BeforeSuite(func() {
	var err error
	root, err = testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())

	env = testenv.MustStartAPIServer()

	// StartAPIServer has set KUBEBUILDER_ASSETS when the Makefile had not.
	kubectl = filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	_, err = os.Stat(kubectl)
	Expect(err).NotTo(HaveOccurred(), "no kubectl in KUBEBUILDER_ASSETS: run `make k8s-bins`")

	Expect(env.Environment.KubeConfig).NotTo(BeEmpty())
	dir, err := os.MkdirTemp("", "kcm-manifests-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.Environment.KubeConfig, 0o600)).To(Succeed())
})

// run runs a command from the repository root with stdin, and returns its stdout; it fails
// the spec, showing stderr, when the command fails.
func run(stdin []byte, name string, args ...string) []byte {
	GinkgoHelper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	Expect(err).NotTo(HaveOccurred(), "%s %v failed:\n%s", name, args, stderr.String())
	return stdout.Bytes()
}
