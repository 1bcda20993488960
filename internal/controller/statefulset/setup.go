package statefulset

import (
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is statefulset-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:        ControllerName,
	Aliases:     []string{"statefulset"},
	ClientName:  ControllerName,
	Flags:       []options.Flag{options.ConcurrentStatefulsetSyncs},
	Indexes:     []index.Index{index.PodsByController, index.RevisionsByController},
	Convergence: &Convergence,
	Setup:       Setup,
}

// Setup runs statefulset-controller with --concurrent-statefulset-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentStatefulsetSyncs)
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:                     cl,
		APIReader:                  reader,
		Recorder:                   ctx.Recorder(ControllerName),
		SemanticRevisionComparison: ctx.Enabled(features.StatefulSetSemanticRevisionComparison),
		MaxUnavailable:             ctx.Enabled(features.MaxUnavailableStatefulSet),
	}
	if ctx.Enabled(features.StaleControllerConsistencyStatefulSet) {
		r.Stale = staleGuard.Guard(ctx.Manager.GetCache())
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/statefulset/stateful_set.go:172.
var newQueue = setup.Queue("statefulset")
