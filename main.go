// Command kcm is kube-controller-manager rebuilt on controller-runtime. main only wires:
// flags → options → manager → controllers → Start.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/debugz"
	"github.com/kcm/kcm/internal/explain"
	"github.com/kcm/kcm/internal/groups"
	"github.com/kcm/kcm/internal/logging"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/memlimit"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/version"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kcm:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	// `kcm explain ...`, and `kubectl kcm explain ...` (kubectl runs the plugin kubectl-kcm
	// with the arguments after "kcm"): a client command, before the controller manager's
	// flags (none of which is named explain).
	if len(args) > 0 && args[0] == "explain" {
		os.Exit(explain.Run(args[1:], os.Stdout, os.Stderr))
	}
	if filepath.Base(os.Args[0]) == "kubectl-kcm" {
		fmt.Fprintln(os.Stderr, "kubectl kcm: the one subcommand is explain: kubectl kcm explain TYPE/NAME [-n NAMESPACE]")
		os.Exit(explain.ExitError)
	}
	// klog with its defaults until the flags are applied (the standard library's log goes
	// through it too), flushed once more when run returns: main may exit right after.
	logs.InitLogs()
	defer logs.FlushLogs()
	registry := controller.Registry()
	opts := options.New(setup.FlagsRead(registry)...)
	switch err := opts.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		return err
	}
	// client-go's own gates (WatchListClient, ...) follow --feature-gates, as upstream's.
	opts.FeatureGates.ServeClientGo()
	if opts.Version != "false" {
		fmt.Printf("kcm %s (kube-controller-manager v1.37.1 compatible)\n", version.Get())
		return nil
	}
	// As soon as possible, as upstream: everything after logs as the flags say.
	if err := logging.Apply(opts.Logs, opts.FeatureGates.Gate()); err != nil {
		return err
	}
	// Every flag's value at -v=1 ("FLAG: --name=value"), as upstream prints them.
	cliflag.PrintFlags(opts.FlagSet())
	sel, err := setup.Select(registry, opts.Controllers)
	if err != nil {
		return err
	}

	logger := ctrl.Log
	logger.Info("Starting kcm", "version", version.Get())
	// A GC target of 50% over the live heap, not Go's 100%, unless GOGC says otherwise.
	if pct := memlimit.ApplyGCPercent(os.Getenv); pct > 0 {
		logger.Info("Set Go's GC target", "percent", pct)
	}
	// Go's soft memory limit at 90% of the container's, so the collector works harder before
	// the kernel's OOM killer acts; an explicit GOMEMLIMIT wins.
	if soft := memlimit.Apply(os.Getenv, "/sys/fs/cgroup"); soft > 0 {
		logger.Info("Set Go soft memory limit from the container's memory limit", "bytes", soft, "fraction", memlimit.Fraction)
	}
	// kubernetes_feature_enabled, once at startup as upstream.
	opts.FeatureGates.AddMetrics()

	// As upstream: --master and --kubeconfig, or the in-cluster configuration without them.
	base, err := clientcmd.BuildConfigFromFlags(opts.Master, opts.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	cfg := manager.RESTConfig(base, opts)
	mgr, err := manager.New(cfg, opts, setup.CacheRestrictions(registry))
	if err != nil {
		return err
	}
	// The secure port's debug pages, as upstream's Run: what /configz shows, set before
	// serving, and /metrics/slis, /flagz and /statusz beside the base handler's pages.
	if err := debugz.RegisterConfigz(opts, registry); err != nil {
		return err
	}
	manager.AddPages(mgr, func(m *mux.PathRecorderMux) { debugz.Install(m, opts) })
	sctx, err := setup.NewContext(mgr, opts, cfg)
	if err != nil {
		return err
	}
	if opts.ControllerGroups != "" {
		// kcm's own: the controllers shared between replicas, a Lease per group.
		if err := groups.Install(mgr, sctx, sel, registry, cfg); err != nil {
			return err
		}
		return mgr.Start(ctrl.SetupSignalHandler())
	}
	started, err := setup.SetupEnabled(sctx, sel)
	if err != nil {
		return err
	}
	// /healthz names every controller that runs, as upstream's.
	if err := manager.AddControllerChecks(mgr, started); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
