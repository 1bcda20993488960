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
	"strings"
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

// formSpec is how long each fault lasts and how big the workload is.
type formSpec struct {
	Name string
	// Fault is how long a fault lasts (the partition: PartitionFor).
	Fault, PartitionFor time.Duration
	// Quiet is the window over which the manager's CPU is measured once converged.
	Quiet time.Duration
	Load  workloadSize
	Nodes int
	// Flags are given to every manager beside kubeadm's. The full workload's rollout alone,
	// with no fault, takes about 90 s at client-go's default 20 QPS (each controller's own
	// client): 50 ReplicaSets of 10 stepping by maxSurge 2, some seven writes a step. The full
	// form raises both managers' rate alike, so that what the 60 s bound measures is the
	// fault's aftermath, not the rate limit.
	Flags []string
}

var forms = map[string]formSpec{
	"full": {Name: "full", Fault: 45 * time.Second, PartitionFor: 40 * time.Second, Quiet: 30 * time.Second, Nodes: 20,
		Load:  workloadSize{Deployments: 50, Replicas: 10, Jobs: 20, Completions: 10, Parallelism: 3, StatefulReplicas: 5, Services: 10},
		Flags: []string{"--kube-api-qps=100", "--kube-api-burst=200"}},
	"short": {Name: "short", Fault: 15 * time.Second, PartitionFor: 30 * time.Second, Quiet: 15 * time.Second, Nodes: 5,
		Load: workloadSize{Deployments: 4, Replicas: 4, Jobs: 3, Completions: 4, Parallelism: 2, StatefulReplicas: 3, Services: 2}},
}

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

// managersUnderTest are CHAOS_MANAGERS' (kcm, upstream), kcm alone in the short form.
func managersUnderTest() []string {
	def := "kcm,upstream"
	if form.Name == "short" {
		def = "kcm"
	}
	return strings.Split(envOr("CHAOS_MANAGERS", def), ",")
}

func init() {
	name := envOr("CHAOS_FORM", "full")
	f, ok := forms[name]
	if !ok {
		panic(fmt.Sprintf("CHAOS_FORM=%q: want full or short", name))
	}
	form = f
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
