//go:build linux

// Package cluster starts a local cluster on loopback for whole-cluster runs (the benchmark):
// etcd and kube-apiserver through envtest, with the API server's default admission plugins,
// kube-scheduler, and KWOK playing the kubelet of fake nodes that heartbeat through Leases.
// The API server authenticates and authorizes as kubeadm's (configureKubeadmAuth): client
// certificates of the cluster signing CA, bootstrap tokens, the Node authorizer and
// NodeRestriction, so that a node can join as with `kubeadm join`.
// The controller manager under test is started by the caller with StartProcess, so the same
// cluster can be driven by kcm or by upstream's kube-controller-manager; KubeadmArgs is the
// command line kubeadm gives it, with the files and the identity (ControllerManagerKubeconfig)
// this cluster has for it.
//
// Every component logs to <Dir>/<name>.log; Stop ends every process the cluster started.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

const (
	// KWOKAnnotation marks the nodes a kwok process manages; its value names the process.
	KWOKAnnotation = "kwok.x-k8s.io/node"
	// NodesValue is the annotation value of the cluster's own kwok and nodes.
	NodesValue = "fake"
)

// NodeName is the name of the cluster's i-th node.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// Options says where the binaries are and how big the cluster is.
type Options struct {
	// Dir receives the logs, the kubeconfig and kwok's stages.
	Dir string
	// Assets holds kube-apiserver, etcd and kube-scheduler (bin/k8s/<version>).
	Assets string
	// KWOK is the kwok binary.
	KWOK string
	// Nodes is the number of fake nodes; 0 starts neither kube-scheduler nor kwok.
	Nodes int
	// Audit makes the API server log every request's metadata (verb, resource, user agent,
	// time) to AuditLog, one JSON event per line.
	Audit bool
	// APIServerFeatureGates is the API server's --feature-gates ("A=true,B=false"), empty
	// for its defaults; the other components keep theirs.
	APIServerFeatureGates string
	// RuntimeConfig is the API server's --runtime-config ("group/version=true,..."), empty
	// for the groups and versions it serves by default.
	RuntimeConfig string
	// Restartable keeps etcd's data under <Dir>/etcd rather than in a temporary directory, so
	// that KillEtcd and StartEtcd can crash and restart it (faults.go). Stop removes it.
	Restartable bool
}

// Cluster is a running local cluster.
type Cluster struct {
	Dir string
	// Kubeconfig is the path of an administrator's kubeconfig.
	Kubeconfig string
	// ControllerManagerKubeconfig is the path of kubeadm's controller-manager.conf for this
	// cluster: the user ControllerManagerUser, authenticated by a client certificate, with
	// only the rights the API server's bootstrap RBAC gives that user. KubeadmArgs uses it.
	ControllerManagerKubeconfig string
	Config                      *rest.Config
	// Client talks to the API server directly, without a cache.
	Client client.Client
	// StagesFile holds KWOK's stages, for more kwok processes (KWOKArgs).
	StagesFile string
	// AuditLog is the API server's audit log when Options.Audit is set.
	AuditLog string

	env *envtest.Environment
	// kubeadmArgs are StaticPodManifest's, on the node files (KubeadmArgs).
	kubeadmArgs []string
	// restartable: etcd's data is <Dir>/etcd (Options.Restartable).
	restartable bool
	processes   []*Process
	// components are the processes of the cluster's own (kube-scheduler, kwok), not
	// StartProcess's callers'.
	components []*Process
	logs       []*os.File
	// controlPlanePIDs are etcd's and kube-apiserver's, found on first use (ControlPlaneCPU).
	controlPlanePIDs []int
}

// Start starts etcd, kube-apiserver and, when opts.Nodes > 0, kube-scheduler and a kwok that
// runs opts.Nodes fake nodes (NodeName). The nodes keep the API server's not-ready
// taint until a node-lifecycle controller lifts it: see WaitNodesSchedulable.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: opts.Dir}
	if err := c.start(ctx, opts); err != nil {
		return nil, errors.Join(fmt.Errorf("%w (logs in %s)", err, opts.Dir), c.Stop())
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options) error {
	etcdLog, err := c.logFile("etcd")
	if err != nil {
		return err
	}
	apiLog, err := c.logFile("kube-apiserver")
	if err != nil {
		return err
	}
	c.env = &envtest.Environment{BinaryAssetsDirectory: opts.Assets, ControlPlaneStopTimeout: 30 * time.Second}
	c.env.ControlPlane.Etcd = &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	if opts.Restartable {
		c.restartable = true
		c.env.ControlPlane.Etcd.DataDir = filepath.Join(c.Dir, "etcd")
		if err := os.MkdirAll(c.env.ControlPlane.Etcd.DataDir, 0o700); err != nil {
			return err
		}
	}
	apiserver := c.env.ControlPlane.GetAPIServer()
	apiserver.Out, apiserver.Err = apiLog, apiLog
	apiserver.Configure().Set("service-cluster-ip-range", ServiceClusterIPRange)
	if opts.APIServerFeatureGates != "" {
		apiserver.Configure().Set("feature-gates", opts.APIServerFeatureGates)
	}
	if opts.RuntimeConfig != "" {
		apiserver.Configure().Set("runtime-config", opts.RuntimeConfig)
	}
	if err := c.configureKubeadmAuth(apiserver); err != nil {
		return err
	}
	if opts.Audit {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return err
		}
		c.AuditLog = filepath.Join(c.Dir, "audit.log")
		apiserver.Configure().Set("audit-policy-file", policy).Set("audit-log-path", c.AuditLog).
			Set("audit-log-format", "json").Set("audit-log-mode", "blocking").
			// One file: the API server rotates at 100 MB unless told otherwise, and the
			// readers of AuditLog (make bench's -by-controller) read this one file. A
			// 20,000-pod bench writes about 650 MB.
			Set("audit-log-maxsize", "1000000")
	}
	if c.Config, err = c.env.Start(); err != nil {
		c.env = nil
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	c.Config.QPS, c.Config.Burst = -1, 0 // the driver is not what is measured
	if c.Client, err = client.New(c.Config, client.Options{}); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, c.env.KubeConfig, 0o600); err != nil {
		return err
	}
	if err := c.writeKubeadmFiles(); err != nil {
		return err
	}
	if opts.Nodes == 0 {
		return nil
	}

	c.StagesFile = filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(c.StagesFile, []byte(joinYAML(Stages())), 0o644); err != nil {
		return err
	}
	// kube-scheduler plays the cluster's scheduler, not what is measured: at its default
	// client rate (50 QPS) it binds at most 50 pods a second, which bounded every manager's
	// convergence in make bench alike. Unlimited here, as kwok's own client is (and as
	// kwokctl starts its scheduler).
	scheduler, err := c.StartProcess("kube-scheduler", filepath.Join(opts.Assets, "kube-scheduler"),
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--kube-api-qps=5000", "--kube-api-burst=10000")
	if err != nil {
		return err
	}
	kwok, err := c.StartProcess("kwok", opts.KWOK, KWOKArgs(c.Kubeconfig, c.StagesFile, NodesValue)...)
	if err != nil {
		return err
	}
	c.components = append(c.components, scheduler, kwok)
	for i := range opts.Nodes {
		if err := c.Client.Create(ctx, NewNode(NodeName(i), NodesValue)); err != nil {
			return fmt.Errorf("creating node %d: %w", i, err)
		}
	}
	return nil
}

// auditPolicy records each request once, when it completes, without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
`

// Stages are KWOK's exported fast stages: nodes become Ready and heartbeat through Leases;
// scheduled pods become Running and Ready, pods of Jobs complete, deleted pods go at once.
func Stages() []string {
	return []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
}

// KWOKArgs are the arguments of a kwok that manages the nodes annotated
// kwok.x-k8s.io/node=<value>, with the stages in stagesFile.
func KWOKArgs(kubeconfig, stagesFile, value string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KWOKAnnotation + "=" + value,
		"--node-lease-duration-seconds=40",
		"--cidr=10.0.0.0/16",
		"--config=" + stagesFile,
	}
}

// NewNode is a fake node for the kwok that manages annotation value, with room for 110 pods.
func NewNode(name, value string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KWOKAnnotation: value},
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
				"type":                 "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// WaitNodesSchedulable waits until every node is Ready and without the API server's
// not-ready taint, which a node-lifecycle controller lifts.
func (c *Cluster) WaitNodesSchedulable(ctx context.Context, timeout time.Duration) error {
	var pending string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nodes := &corev1.NodeList{}
		if err := c.Client.List(ctx, nodes); err != nil {
			return false, nil
		}
		for i := range nodes.Items {
			if !Schedulable(&nodes.Items[i]) {
				pending = nodes.Items[i].Name
				return false, nil
			}
		}
		return len(nodes.Items) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready and schedulable within %s (logs in %s): %w", pending, timeout, c.Dir, err)
	}
	return nil
}

// Schedulable reports whether the node is Ready and free of the not-ready taint.
func Schedulable(node *corev1.Node) bool {
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	return ready
}

// Processes are the processes the cluster started, its own and StartProcess's, in order: a
// copy, which the caller may change.
func (c *Cluster) Processes() []*Process { return slices.Clone(c.processes) }

// Stop stops every process the cluster started (in reverse order), then kube-apiserver and etcd.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.processes) - 1; i >= 0; i-- {
		c.processes[i].Stop(10 * time.Second)
	}
	if c.env != nil {
		errs = append(errs, c.env.Stop())
		if c.restartable {
			errs = append(errs, os.RemoveAll(c.env.ControlPlane.Etcd.DataDir))
		}
	}
	for _, f := range c.logs {
		_ = f.Close()
	}
	return errors.Join(errs...)
}

// logFile opens <Dir>/<name>.log for appending; Stop closes it.
func (c *Cluster) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(c.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c.logs = append(c.logs, f)
	return f, nil
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
