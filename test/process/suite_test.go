//go:build linux

// Package process_test runs the real kcm binary as separate processes against the real
// kube-apiserver: the command line, the controllers it runs by default and on request,
// kubeadm's static pod arguments, leader election between two processes, the HTTPS health
// and metrics server, and `make run`'s local control plane. One API server serves the whole
// package; every spec creates its own namespaces and Lease names.
package process_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// root is the repository root; binaries are built from there.
	root string
	// binDir holds the binaries the suite builds.
	binDir string
	// kcmBinary is kcm built from this tree.
	kcmBinary string
	// kubeconfig reaches the suite's API server as an administrator.
	kubeconfig string
)

func TestProcess(t *testing.T) {
	testenv.RunSuite(t, "kcm process suite")
}

var _ = BeforeSuite(func() {
	var err error
	root, err = testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())

	binDir, err = os.MkdirTemp("", "kcm-process-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, binDir)
	kcmBinary = filepath.Join(binDir, "kcm")
	build(kcmBinary, "github.com/kcm/kcm")

	env = testenv.MustStartAPIServer()
	kubeconfig = filepath.Join(binDir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.Environment.KubeConfig, 0o600)).To(Succeed())
})

// The kcm processes stop before the API server, which MustStartAPIServer stops after this.
var _ = AfterSuite(stopAllProcesses)

// build builds a main package of this module into out.
func build(out, pkg string) {
	GinkgoHelper()
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build %s:\n%s", pkg, output)
	GinkgoWriter.Printf("built %s in %s\n", pkg, time.Since(start).Round(time.Millisecond))
}
