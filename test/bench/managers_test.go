//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/testenv"
)

// startManager starts the manager under test against env's API server; stop stops it.
type startManager func(env *testenv.Env) (stop func(), err error)

// benchManagers runs bench twice, each on the API server bench starts: manager=kcm with kcm's
// given controllers in the test process, and manager=upstream with upstream's
// kube-controller-manager ($UPSTREAM_KCM, else bin/k8s/1.37.1's) running
// upstreamControllers as a process, skipped when it is not built. Both run as kubeadm runs
// them (their own ServiceAccounts, upstream's default --kube-api-qps and burst).
func benchManagers(b *testing.B, kcmControllers []string, upstreamControllers string, bench func(*testing.B, startManager)) {
	ctrllog.SetLogger(logr.Discard())
	b.Run("manager=kcm", func(b *testing.B) {
		bench(b, func(env *testenv.Env) (func(), error) {
			if err := env.StartManager(kcmControllers); err != nil {
				return nil, err
			}
			return func() { _ = env.StopManager() }, nil
		})
	})
	b.Run("manager=upstream", func(b *testing.B) {
		bin := os.Getenv("UPSTREAM_KCM")
		if bin == "" {
			if root, err := testenv.RepoRoot(); err == nil {
				bin = filepath.Join(root, testenv.AssetsDir, "kube-controller-manager")
			}
		}
		if _, err := os.Stat(bin); err != nil {
			b.Skipf("upstream's kube-controller-manager is not built (make bench builds it): %v", err)
		}
		bench(b, func(env *testenv.Env) (func(), error) {
			return startUpstreamControllers(b, env, bin, upstreamControllers)
		})
	})
}

// startUpstreamControllers runs upstream's kube-controller-manager as kubeadm's identity
// with --use-service-account-credentials and only the given controllers, serving nothing,
// without leader election.
func startUpstreamControllers(b *testing.B, env *testenv.Env, bin, controllers string) (func(), error) {
	user, err := env.Environment.AddUser(envtest.User{Name: testenv.KubeadmUser}, env.Config)
	if err != nil {
		return nil, err
	}
	conf, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "controller-manager.conf")
	if err := os.WriteFile(kubeconfig, conf, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--use-service-account-credentials=true", "--controllers="+controllers)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = logFile.Close()
	}, nil
}

// unthrottledClient is the benchmark's own client: not rate limited, since preparing the
// objects is not what is measured.
func unthrottledClient(b *testing.B, env *testenv.Env) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cl, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}
