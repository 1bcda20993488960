package garbagecollector

import (
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is garbage-collector-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"garbagecollector"},
	ClientName: ClientName,
	Flags:      []options.Flag{options.EnableGarbageCollector, options.ConcurrentGCSyncs},
	Setup:      Setup,
}

// Setup runs the garbage collector as upstream wires it: not at all with
// --enable-garbage-collector=false (or --concurrent-gc-syncs=0, with which upstream starts no
// worker), else with --concurrent-gc-syncs workers, upstream's ignored resources and
// discovery period, and a client of its own with twice the QPS (each collected object costs
// two API calls: a read and a deletion) and the same burst.
func Setup(ctx *setup.Context) error {
	logger := log.Log.WithName("controllers").WithValues("controller", ControllerName)
	enabled := ctx.Bool(options.EnableGarbageCollector)
	workers := ctx.Workers(options.ConcurrentGCSyncs)
	if !enabled {
		logger.Info("Garbage collector disabled by --enable-garbage-collector=false")
		return setup.ErrSkipped
	}
	if workers < 1 {
		// Upstream starts no worker then: nothing is ever collected.
		logger.Info("Garbage collector not started: no workers", "concurrent-gc-syncs", workers)
		return setup.ErrSkipped
	}
	registerMetrics()
	cfg, err := ctx.ScaledRESTConfig(2, 1)
	if err != nil {
		return err
	}
	r := &Reconciler{
		Config:           cfg,
		Recorder:         ctx.Recorder(ControllerName),
		DiscoveryPeriod:  DefaultDiscoveryPeriod,
		IgnoredResources: DefaultIgnoredResources(),
	}
	setup.Apply(ctx, r)
	if err := r.SetupWithManager(ctx.Manager, workers); err != nil {
		return err
	}
	// Upstream's collector is Debuggable: its graph is served at DebugPath/graph.
	ctx.DebugHandler(DebugPath, r.graph.debugHandler())
	return nil
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/garbagecollector/graph_builder.go:154.
var newQueue = setup.TypedQueue[request]("garbage_collector_attempt_to_delete")
