//go:build linux

// Command localplane is what `make run` starts when no cluster is given: a whole local cluster
// (test/cluster, as `make e2e` runs it: etcd, kube-apiserver, kube-scheduler, and KWOK playing
// the kubelet of a few fake nodes) with kcm as its kube-controller-manager, started as kubeadm
// starts kube-controller-manager: kubeadm's static-pod arguments and the identity of its
// controller-manager.conf, each controller acting as its own ServiceAccount. A Deployment
// created there becomes Available within seconds. It prints the administrator's kubeconfig,
// commands to try and how to add nodes (with --cloud-provider=pool, also how to give kcm's
// pool provider addresses and expose a LoadBalancer Service), and stops everything on Ctrl-C,
// leaving nothing running.
//
//	go run ./hack/localplane -kcm bin/kcm -kwok bin/kwok-v0.8.0 -nodes 3 -- [kcm flags]
//
// kcm flags given after -- replace kubeadm's flags of the same name (--controllers=... replaces
// kubeadm's list) or are added.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/test/cluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localplane:", err)
		os.Exit(1)
	}
}

func run() error {
	kcmBinary := flag.String("kcm", "bin/kcm", "the kcm binary to run")
	dir := flag.String("dir", "bin/localplane.d", "where to write the kubeconfigs, kubeadm's files, the components' logs and a node manifest")
	assets := flag.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "the directory of kube-apiserver, etcd and kube-scheduler (default $KUBEBUILDER_ASSETS, else "+testenv.AssetsDir+")")
	kwok := flag.String("kwok", os.Getenv("KWOK"), "the kwok binary (default $KWOK, else bin/kwok-v0.8.0)")
	nodes := flag.Int("nodes", 3, "how many fake nodes KWOK runs from the start")
	flag.Parse()
	if *nodes < 1 {
		return fmt.Errorf("-nodes %d: at least one node is needed to run pods", *nodes)
	}
	if *assets == "" {
		*assets = testenv.AssetsDir
	}
	if *kwok == "" {
		*kwok = "bin/kwok-v0.8.0"
	}
	for _, bin := range []string{filepath.Join(*assets, "kube-apiserver"), filepath.Join(*assets, "kube-scheduler"), *kwok, *kcmBinary} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%w (`make run` builds it)", err)
		}
	}
	var err error
	if *dir, err = filepath.Abs(*dir); err != nil {
		return err
	}
	if err := removeLogs(*dir); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintf(os.Stderr, "Starting etcd, kube-apiserver, kube-scheduler and kwok with %d fake nodes (logs in %s)...\n", *nodes, *dir)
	c, err := cluster.Start(ctx, cluster.Options{Dir: *dir, Assets: *assets, KWOK: *kwok, Nodes: *nodes})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "Stopping kwok, kube-scheduler, kube-apiserver and etcd...")
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localplane: stopping the cluster:", err)
		}
		// They would name an API server that is gone.
		_ = os.Remove(c.Kubeconfig)
		_ = os.Remove(c.ControllerManagerKubeconfig)
	}()
	nodeManifest := filepath.Join(*dir, "node.yaml")
	nextNode := cluster.NodeName(*nodes)
	if err := writeNodeManifest(nodeManifest, nextNode); err != nil {
		return err
	}

	// kubeadm's command line, except that kcm serves its health and metrics nowhere: a local
	// run must not collide with a real controller manager on 10257. The user's flags come last
	// and replace any of the same name.
	args := c.KubeadmArgs(append([]string{"--secure-port=0"}, flag.Args()...)...)
	cmd := exec.Command(*kcmBinary, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Its own process group, so that the terminal's Ctrl-C reaches it only through us, in
	// order; killed should we die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(os.Stderr, "Starting kcm as kubeadm starts kube-controller-manager (as %s, from %s)...\n",
		cluster.ControllerManagerUser, c.ControllerManagerKubeconfig)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kcm: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The nodes are schedulable once kcm's node-lifecycle-controller has lifted the API
	// server's not-ready taint: only then does a Deployment run.
	schedulable := make(chan error, 1)
	go func() { schedulable <- c.WaitNodesSchedulable(ctx, 2*time.Minute) }()
	select {
	case err := <-exited:
		return fmt.Errorf("kcm exited: %w", err)
	case <-ctx.Done():
		return stopKCM(cmd, exited)
	case err := <-schedulable:
		if err != nil && ctx.Err() == nil {
			// kcm runs, perhaps without node-lifecycle-controller (--controllers): say so, and
			// leave the cluster to the user.
			fmt.Fprintln(os.Stderr, "localplane: warning:", err)
		}
	}
	printHelp(c.Kubeconfig, c.ControllerManagerKubeconfig, nodeManifest, nextNode, *nodes, *dir, cloudProvider(args))

	select {
	case err := <-exited:
		return fmt.Errorf("kcm exited: %w", err)
	case <-ctx.Done():
	}
	return stopKCM(cmd, exited)
}

// stopKCM stops kcm before the cluster, so that it is not left to notice, a lease renew
// deadline later, that its API server has gone.
func stopKCM(cmd *exec.Cmd, exited <-chan error) error {
	fmt.Fprintln(os.Stderr, "Stopping kcm...")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return err
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}

func printHelp(kubeconfig, controllerManagerConf, nodeManifest, nextNode string, nodes int, dir, cloud string) {
	k := "kubectl --kubeconfig " + kubeconfig
	var names []string
	for i := range nodes {
		names = append(names, cluster.NodeName(i))
	}
	// With kcm's own cloud provider, LoadBalancer Services need addresses to give: the
	// sample pools of config/cloud-pool (make run's working directory is the repository's).
	loadBalancers := ""
	if cloud == pool.ProviderName {
		pools := poolsSample
		if abs, err := filepath.Abs(pools); err == nil {
			pools = abs
		}
		loadBalancers = fmt.Sprintf(`
LoadBalancer Services (--cloud-provider=%s): give the pool provider addresses, then expose hello:
  %s apply -f %s
  %s expose deployment hello --type=LoadBalancer --port=80
  %s get service hello
`, pool.ProviderName, k, pools, k, k)
	}
	fmt.Fprintf(os.Stderr, `
A local cluster is running with kcm as its kube-controller-manager, under kubeadm's identity
(%s, each controller as its own ServiceAccount).
  kubeconfig: %s
  nodes:      %s (KWOK plays their kubelet: pods become Running, no container runs)
  logs:       %s/*.log (kcm logs to this terminal)

Try:
  %s create deployment hello --image=nginx --replicas=2
  %s get deploy,pods -o wide
%s
Add a node (the kwok process runs every node annotated %s=%s):
  %s apply -f %s
  sed 's/%s/my-node/g' %s | %s apply -f -
or start with more: make run NODES=%d

Press Ctrl-C to stop everything.

`, controllerManagerConf, kubeconfig, strings.Join(names, " "), dir, k, k, loadBalancers,
		cluster.KWOKAnnotation, cluster.NodesValue, k, nodeManifest, nextNode, nodeManifest, k, nodes+2)
}

// poolsSample is the sample ConfigMap of the pool provider's address pools, from the
// repository's root.
const poolsSample = "config/cloud-pool/address-pools.yaml"

// cloudProvider is the value kcm's command line gives --cloud-provider (the last one given,
// as kcm's flag parsing takes), or empty.
func cloudProvider(args []string) string {
	provider := ""
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "cloud-provider" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		provider = value
	}
	return provider
}

// writeNodeManifest writes the node the cluster's kwok would run, as the cluster creates its
// own (test/cluster.NewNode), for kubectl apply.
func writeNodeManifest(path, name string) error {
	node := cluster.NewNode(name, cluster.NodesValue)
	node.APIVersion, node.Kind = "v1", "Node"
	data, err := yaml.Marshal(node)
	if err != nil {
		return err
	}
	// Left out: what a node never stored has empty (creation time, spec, the system info and
	// endpoints its kubelet reports), so that the file holds only what the user may change.
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return err
	}
	delete(m, "spec")
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	status := m["status"].(map[string]any)
	delete(status, "nodeInfo")
	delete(status, "daemonEndpoints")
	if data, err = yaml.Marshal(m); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// removeLogs removes the logs of an earlier run, which the cluster would append to.
func removeLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return err
	}
	for _, l := range logs {
		if err := os.Remove(l); err != nil {
			return err
		}
	}
	return nil
}
