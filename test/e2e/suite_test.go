//go:build e2e && linux

// Package e2e_test runs whole-cluster specs against a local cluster on loopback: etcd and
// kube-apiserver (through envtest, with the API server's default admission plugins),
// kube-scheduler, KWOK playing the kubelet of three fake nodes, and the kcm binary built from
// this tree as a separate process with its default controllers. Specs use only the public
// API (a client, or kubectl), as a user would.
//
// Run it with `make e2e`; it is behind the `e2e` build tag so that `go test ./...` skips it.
// Every component writes its log under bin/e2e-logs/<timestamp>/, which failures name.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"

	"github.com/kcm/kcm/internal/testenv"
)

const (
	// kwokAnnotation marks the nodes a kwok process manages; its value names the process.
	kwokAnnotation = "kwok.x-k8s.io/node"
	// liveNodes is the annotation value of the suite's kwok, which runs the cluster's nodes.
	liveNodes = "fake"
	nodeCount = 3
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
	// stagesFile holds KWOK's fast node and pod stages.
	stagesFile string
	// cl talks to the API server directly, without a cache.
	cl client.Client
	// components are the cluster's long-running processes, checked after every spec.
	components []*process
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
	scheduler := filepath.Join(assets, "kube-scheduler")
	kwokBinary = envOr("KWOK", filepath.Join(root, "bin", "kwok-v0.8.0"))
	for _, bin := range []string{filepath.Join(assets, "kube-apiserver"), filepath.Join(assets, "etcd"), scheduler, kubectl} {
		Expect(bin).To(BeAnExistingFile(), "run `make k8s-bins` (or `make e2e`) first")
	}
	Expect(kwokBinary).To(BeAnExistingFile(), "run `make kwok` (or `make e2e`) first")
	kcmBinary := envOr("KCM_BINARY", "")
	if kcmBinary == "" {
		kcmBinary = filepath.Join(logDir, "kcm")
		build(kcmBinary, "github.com/kcm/kcm")
	}

	By("starting etcd and kube-apiserver")
	te := &envtest.Environment{ControlPlaneStopTimeout: 30 * time.Second}
	te.ControlPlane.Etcd = &envtest.Etcd{Out: logFile("etcd"), Err: logFile("etcd")}
	apiserver := te.ControlPlane.GetAPIServer()
	apiserver.Out, apiserver.Err = logFile("kube-apiserver"), logFile("kube-apiserver")
	cfg, err := te.Start()
	Expect(err).NotTo(HaveOccurred(), "starting the control plane; logs in %s", logDir)
	DeferCleanup(func() {
		By("stopping kube-apiserver and etcd")
		Expect(te.Stop()).To(Succeed())
	})
	cl, err = client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(logDir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, te.KubeConfig, 0o600)).To(Succeed())

	stagesFile = filepath.Join(logDir, "kwok-stages.yaml")
	stages := []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
	Expect(os.WriteFile(stagesFile, []byte(joinYAML(stages)), 0o644)).To(Succeed())

	By("starting kube-scheduler, kwok and kcm")
	components = append(components,
		startProcess("kube-scheduler", scheduler, "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0"),
		startKWOK("kwok", liveNodes),
		startProcess("kcm", kcmBinary, "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0"),
	)

	By(fmt.Sprintf("creating %d fake nodes", nodeCount))
	for i := range nodeCount {
		createNode(ctx, fmt.Sprintf("kwok-node-%d", i), liveNodes)
	}
	for i := range nodeCount {
		waitNodeSchedulable(ctx, fmt.Sprintf("kwok-node-%d", i))
	}
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(func() {
	if CurrentSpecReport().Failed() {
		fmt.Fprintf(GinkgoWriter, "component logs: %s\n", logDir)
	}
	expectRunning(components...)
})

// startKWOK starts a kwok process managing the nodes annotated kwok.x-k8s.io/node=<value>.
func startKWOK(name, value string) *process {
	GinkgoHelper()
	return startProcess(name, kwokBinary,
		"--kubeconfig="+kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"="+value,
		"--node-lease-duration-seconds=40",
		"--cidr=10.0.0.0/16",
		"--config="+stagesFile,
	)
}

// createNode creates a fake node for the kwok process that manages annotation value.
func createNode(ctx context.Context, name, value string) {
	GinkgoHelper()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokAnnotation: value},
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
				"type":                 "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	Expect(cl.Create(ctx, node)).To(Succeed())
}

// waitNodeSchedulable waits until the node is Ready and the not-ready taint the API server
// put on it is gone (kcm's node-lifecycle-controller lifts it).
func waitNodeSchedulable(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		g.Expect(nodeReady(node)).To(Equal(corev1.ConditionTrue), "node %s Ready", name)
		for _, t := range node.Spec.Taints {
			g.Expect(t.Key).NotTo(Equal(corev1.TaintNodeNotReady), "node %s taints", name)
		}
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// logFile opens <logDir>/<name>.log for appending.
func logFile(name string) *os.File {
	GinkgoHelper()
	f, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	return f
}

// joinYAML joins YAML documents into one stream.
func joinYAML(docs []string) string {
	var b strings.Builder
	for _, d := range docs {
		b.WriteString("---\n")
		b.WriteString(strings.TrimSpace(d))
		b.WriteString("\n")
	}
	return b.String()
}

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

// envOr returns the environment variable's value, a path taken from the repository root when
// relative, or def when unset.
func envOr(key, def string) string {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(root, v)
	}
	return v
}
