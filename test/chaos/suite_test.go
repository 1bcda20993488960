//go:build chaos && linux

// Package chaos_test holds kcm's invariants while the control plane misbehaves (issue 36): on
// a local cluster (test/cluster: etcd, kube-apiserver, kube-scheduler, KWOK nodes, all real)
// the manager under test reaches the API server through a fault-injecting proxy
// (test/chaos/faultproxy) and runs a workload (workload_test.go) through one fault a spec:
// 429 storms, 5xx bursts and reset connections, latency, cut watches with etcd compacted under
// them, a partition of the leader, restarts of the API server and of etcd. An independent
// watcher (test/chaos/invariants), the test's own client straight to the API server, checks the
// invariants for the whole run; after each fault the workload must converge within a minute,
// the manager go quiet and its memory come back.
//
// The same run drives upstream kube-controller-manager v1.37.1 (CHAOS_MANAGERS=kcm,upstream,
// the default of `make chaos`), and the suite prints a table of both and writes
// bin/chaos/result.json. CHAOS_FORM=short (what `make e2e` runs in CI) is each fault once,
// shorter, on a small workload, for kcm only.
package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var (
	root string
	// runDir holds every cluster's logs for this run; results go to bin/chaos.
	runDir             string
	assets, kwokBinary string
	// form is the run's size: full (make chaos) or short (CI).
	form formSpec
	// results are the table's rows, in the order the specs ran.
	results []result
)

func TestChaos(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kcm chaos suite")
}

var _ = BeforeSuite(func() {
	var err error
	root, err = testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	runDir = filepath.Join(root, "bin", "chaos", time.Now().UTC().Format("20060102-150405"))
	Expect(os.MkdirAll(runDir, 0o755)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "logs: %s\n", runDir)
	assets = envOr("KUBEBUILDER_ASSETS", filepath.Join(root, testenv.AssetsDir))
	kwokBinary = envOr("KWOK", filepath.Join(root, "bin", "kwok-v0.8.0"))
	for _, bin := range []string{filepath.Join(assets, "kube-apiserver"), filepath.Join(assets, "etcd"), kwokBinary} {
		Expect(bin).To(BeAnExistingFile(), "run `make k8s-bins kwok` first")
	}
})

var _ = AfterSuite(func() {
	if len(results) == 0 {
		return
	}
	table := renderTable(results)
	fmt.Fprint(GinkgoWriter, table)
	// Also on stdout, which `make chaos` shows whatever the verbosity.
	fmt.Print(table)
	Expect(writeResults(filepath.Join(root, "bin", "chaos", "result.json"), form, results)).To(Succeed())
})

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
