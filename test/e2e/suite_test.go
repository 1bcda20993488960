//go:build e2e && linux

// Package e2e_test runs whole-cluster specs against a local cluster on loopback (test/cluster:
// etcd and kube-apiserver through envtest, with the API server's default admission plugins and
// kubeadm's authentication and authorization (bootstrap tokens, client certificates of the
// cluster signing CA, Node,RBAC, NodeRestriction), kube-scheduler, KWOK playing the kubelet of
// three fake nodes) and the kcm binary built from this tree as a separate process, started as
// kubeadm's static pod starts kube-controller-manager: its full argument list, and the
// identity of kubeadm's controller-manager.conf (the user system:kube-controller-manager, by
// client certificate) with --use-service-account-credentials, not an administrator's. Specs
// use only the public API (a client, or kubectl), as a user would; after them, kcm's log must
// hold no request refused as forbidden.
//
// Run it with `make e2e`; it is behind the `e2e` build tag so that `go test ./...` skips it.
// Every component writes its log under bin/e2e-logs/<timestamp>/, which failures name.
package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/test/cluster"
)

var (
	// root is the repository root.
	root string
	// logDir holds every component's log, the kubeconfig and kwok's stages for this run.
	logDir string
	// kubeconfig reaches the API server as an administrator; kubectl is bin/k8s/1.37.1/kubectl.
	kubeconfig, kubectl string
	// kwokBinary is bin/kwok-v0.8.0 unless $KWOK says otherwise.
	kwokBinary string
	// local is the cluster: etcd, kube-apiserver, kube-scheduler, kwok and its nodes.
	local *cluster.Cluster
	// cl talks to the API server directly, without a cache.
	cl client.Client
	// components are the cluster's long-running processes and kcm, checked after every spec.
	components []*cluster.Process
	// kcm is the kcm process, started as kubeadm starts kube-controller-manager (startKCM).
	kcm *cluster.Process
	// kcmBinary is $KCM_BINARY, or kcm built from this tree.
	kcmBinary string
)

const nodeCount = 3

// The API server serves the APIs of the controllers kcm runs only behind off-by-default gates
// (gated_test.go): PodGroups (scheduling.k8s.io/v1beta1, with the PodGroupProtection
// admission plugin) and ResourcePoolStatusRequests (resource.k8s.io/v1alpha3). They add
// APIs and admission for objects that use them only; kcm and kube-scheduler keep their
// defaults, as kubeadm's do, unless a spec restarts kcm with the gates.
const (
	apiServerGates         = "GenericWorkload=true,DRAResourcePoolStatus=true"
	apiServerRuntimeConfig = "scheduling.k8s.io/v1beta1=true,resource.k8s.io/v1alpha3=true"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kcm e2e suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	root, err = testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	logDir = filepath.Join(root, "bin", "e2e-logs", time.Now().UTC().Format("20060102-150405"))
	Expect(os.MkdirAll(logDir, 0o755)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "component logs: %s\n", logDir)

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, testenv.AssetsDir)
		Expect(os.Setenv("KUBEBUILDER_ASSETS", assets)).To(Succeed())
	}
	kubectl = filepath.Join(assets, "kubectl")
	kwokBinary = envOr("KWOK", filepath.Join(root, "bin", "kwok-v0.8.0"))
	for _, bin := range []string{"kube-apiserver", "etcd", "kube-scheduler", "kubectl"} {
		Expect(filepath.Join(assets, bin)).To(BeAnExistingFile(), "run `make k8s-bins` (or `make e2e`) first")
	}
	Expect(kwokBinary).To(BeAnExistingFile(), "run `make kwok` (or `make e2e`) first")
	kcmBinary = envOr("KCM_BINARY", "")
	if kcmBinary == "" {
		kcmBinary = filepath.Join(logDir, "kcm")
		build(kcmBinary, "github.com/kcm/kcm")
	}

	By(fmt.Sprintf("starting etcd, kube-apiserver, kube-scheduler and kwok with %d fake nodes", nodeCount))
	local, err = cluster.Start(ctx, cluster.Options{Dir: logDir, Assets: assets, KWOK: kwokBinary, Nodes: nodeCount,
		APIServerFeatureGates: apiServerGates, RuntimeConfig: apiServerRuntimeConfig})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		By("stopping every process, then kube-apiserver and etcd")
		Expect(local.Stop()).To(Succeed())
	})
	cl, kubeconfig = local.Client, local.Kubeconfig

	By("starting kcm as kubeadm does: its static pod's arguments, as the user " + cluster.ControllerManagerUser)
	kcm = startKCM()
	components = local.Processes()
	for i := range nodeCount {
		waitNodeSchedulable(ctx, cluster.NodeName(i))
	}
}, NodeTimeout(5*time.Minute))

// The specs have run kcm's controllers as a kubeadm cluster runs them, each as its own
// ServiceAccount under the API server's own system:controller:<name> role: none may have
// been refused anything.
var _ = AfterSuite(func() {
	if kcm == nil {
		return
	}
	lines := forbiddenLines(kcm.LogPath)
	Expect(lines).To(BeEmpty(), "kcm's log %s has %d lines saying forbidden, which upstream's roles do not allow:\n%s",
		kcm.LogPath, len(lines), strings.Join(lines[:min(len(lines), 30)], "\n"))
})

var _ = AfterEach(func() {
	if CurrentSpecReport().Failed() {
		fmt.Fprintf(GinkgoWriter, "component logs: %s\n", logDir)
	}
	for _, p := range components {
		Expect(p.Exited()).To(BeFalse(), "%s", p.State())
	}
})
