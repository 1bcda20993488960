package daemonset

import (
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is daemonset-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"daemonset"},
	ClientName: "daemon-set-controller",
	Flags:      []options.Flag{options.ConcurrentDaemonsetSyncs},
	Indexes:    []index.Index{index.PodsByController, index.RevisionsByController},
	Setup:      Setup,
}

// Setup runs daemonset-controller with --concurrent-daemonset-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentDaemonsetSyncs)
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(ControllerName),
		// Read as upstream's daemon controller reads it when it judges taints.
		ComparisonOperators: ctx.Enabled(features.TaintTolerationComparisonOperators),
	}
	if ctx.Enabled(features.StaleControllerConsistencyDaemonSet) {
		r.Stale = staleGuard.Guard(ctx.Manager.GetCache())
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/daemon/daemon_controller.go:212.
var newQueue = setup.Queue("daemonset")
