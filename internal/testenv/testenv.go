// Package testenv starts what a controller's envtest suite needs: the real kube-apiserver and
// etcd built by `make k8s-bins`, and a kcm manager wired exactly as main wires it, running
// the controllers under test. Start it once per test package (BeforeSuite), not per test.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/logging"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// AssetsDir is where `make k8s-bins` puts kube-apiserver, etcd and kubectl, relative to the
// repository root.
const AssetsDir = "bin/k8s/1.37.1"

// Env is a running API server and, optionally, a kcm manager against it.
type Env struct {
	Environment *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client talks to the API server directly, without a cache: what tests assert with.
	Client client.Client
	// Manager runs the controllers under test; nil when none were asked for.
	Manager ctrlmanager.Manager

	cancel  context.CancelFunc
	stopped chan error
	kubeadm *rest.Config
}

// DualStack gives the API server an IPv4 and an IPv6 service range, so that Services can
// ask for both families (StartAPIServer(DualStack)).
func DualStack(te *envtest.Environment) {
	te.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/24,fd00:10:96::/108")
}

// testLogs shows the manager's logs as kcm -v=4 prints them (KCM_TEST_LOG), through main's
// own logging.Apply; once per test binary, since klog takes one configuration per process.
var testLogs = sync.OnceValue(func() error {
	c := logsapi.NewLoggingConfiguration()
	c.Verbosity = 4
	return logging.Apply(c, features.New().Gate())
})

// StartAPIServer starts kube-apiserver and etcd only, configured by configure (e.g. DualStack).
func StartAPIServer(configure ...func(*envtest.Environment)) (*Env, error) {
	if err := ensureAssets(); err != nil {
		return nil, err
	}
	if os.Getenv("KCM_TEST_LOG") != "" {
		if err := testLogs(); err != nil {
			return nil, fmt.Errorf("applying KCM_TEST_LOG's logging: %w", err)
		}
	}
	te := &envtest.Environment{ControlPlaneStopTimeout: 30 * time.Second}
	for _, c := range configure {
		c(te)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		_ = te.Stop()
		return nil, err
	}
	return &Env{Environment: te, Config: cfg, Client: cl}, nil
}

// Start starts the API server and a kcm manager running the given controllers, configured
// by kcm's own flags (args, e.g. "--root-ca-file=..."), without leader election or serving.
func Start(controllers []string, args ...string) (*Env, error) {
	env, err := StartAPIServer()
	if err != nil {
		return nil, err
	}
	if err := env.StartManager(controllers, args...); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return env, nil
}

// KubeadmUser is the identity kubeadm's controller-manager.conf gives kube-controller-manager.
const KubeadmUser = "system:kube-controller-manager"

// KubeadmConfig reaches the API server as kubeadm's kube-controller-manager does: the user
// system:kube-controller-manager, authenticated by a client certificate, with only the
// rights the API server's bootstrap RBAC gives that user.
func (e *Env) KubeadmConfig() (*rest.Config, error) {
	if e.kubeadm == nil {
		u, err := e.Environment.AddUser(envtest.User{Name: KubeadmUser}, e.Config)
		if err != nil {
			return nil, fmt.Errorf("adding user %s: %w", KubeadmUser, err)
		}
		e.kubeadm = u.Config()
	}
	return rest.CopyConfig(e.kubeadm), nil
}

// StartManager starts a kcm manager against the environment's API server, running the
// named controllers through their own Setup, configured by kcm's flags (args). It runs kcm
// the way a kubeadm cluster does: as system:kube-controller-manager with
// --use-service-account-credentials, so each controller writes as its own ServiceAccount
// under the API server's own system:controller:<name> role (args may turn that off).
func (e *Env) StartManager(controllers []string, args ...string) error {
	return e.StartManagerWith(controllers, args)
}

// StartManagerWith is StartManager with overrides: each adjusts one controller's Reconciler
// after its Setup built it from the flags and before it is registered (shorter periods, a
// fake clock). The manager runs without leader election or serving.
func (e *Env) StartManagerWith(controllers, args []string, overrides ...setup.Override) error {
	registry := controller.Registry()
	opts := options.New(setup.FlagsRead(registry)...)
	args = append([]string{"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=true",
		"--controllers=" + strings.Join(controllers, ",")}, args...)
	if err := opts.Parse(args); err != nil {
		return err
	}
	sel, err := setup.Select(registry, opts.Controllers)
	if err != nil {
		return err
	}
	base, err := e.KubeadmConfig()
	if err != nil {
		return err
	}
	cfg := manager.RESTConfig(base, opts)
	mgr, err := manager.New(cfg, opts, setup.CacheRestrictions(registry), func(o *ctrlmanager.Options) {
		// A test binary may build the same controller twice (e.g. after a restart).
		o.Controller.SkipNameValidation = ptr.To(true)
	})
	if err != nil {
		return err
	}
	sctx, err := setup.NewContext(mgr, opts, cfg, overrides...)
	if err != nil {
		return err
	}
	if _, err := setup.SetupEnabled(sctx, sel); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Manager, e.cancel, e.stopped = mgr, cancel, make(chan error, 1)
	go func() { e.stopped <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return errors.New("manager cache did not sync within a minute")
	}
	return nil
}

// StopManager stops the manager, if one runs, and waits for it.
func (e *Env) StopManager() error {
	if e.cancel == nil {
		return nil
	}
	e.cancel()
	err := <-e.stopped
	e.cancel, e.Manager = nil, nil
	return err
}

// Stop stops the manager and then the API server.
func (e *Env) Stop() error {
	return errors.Join(e.StopManager(), e.Environment.Stop())
}

// ensureAssets points envtest at the binaries `make k8s-bins` built, when the Makefile has
// not already done so (a plain `go test` from an editor).
func ensureAssets() error {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return nil
	}
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, AssetsDir)
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return fmt.Errorf("no kube-apiserver in %s: run `make k8s-bins` (or `make test`) first", dir)
	}
	return os.Setenv("KUBEBUILDER_ASSETS", dir)
}

// RepoRoot finds the repository root: the nearest directory above the working directory
// holding kcm's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/kcm/kcm\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kcm repository")
		}
		dir = parent
	}
}
