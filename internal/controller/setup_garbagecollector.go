package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/garbagecollector"
)

// garbageCollectorFlags are the upstream flags the garbage-collector-controller reads.
var garbageCollectorFlags = []string{"enable-garbage-collector", "concurrent-gc-syncs"}

// setupGarbageCollector runs the garbage collector as upstream wires it: not at all with
// --enable-garbage-collector=false (or --concurrent-gc-syncs=0, with which upstream starts no
// worker), else with --concurrent-gc-syncs workers, upstream's ignored resources and
// discovery period, and a client of its own with twice the QPS.
func setupGarbageCollector(ctx *Context) error {
	if !ctx.Options.Bool("enable-garbage-collector") {
		log.Log.WithName("controllers").Info("Garbage collector disabled by --enable-garbage-collector=false", "controller", garbagecollector.ControllerName)
		return nil
	}
	workers := ctx.Workers("concurrent-gc-syncs", garbagecollector.DefaultWorkers)
	if workers < 1 {
		// Upstream starts no worker then: nothing is ever collected.
		log.Log.WithName("controllers").Info("Garbage collector not started: no workers", "controller", garbagecollector.ControllerName, "concurrent-gc-syncs", workers)
		return nil
	}
	r := &garbagecollector.Reconciler{
		Config: garbagecollector.ClientConfig(ctx.Config, ctx.Options.KubeAPIQPS, int(ctx.Options.KubeAPIBurst),
			UserAgent(garbagecollector.ClientName)),
		Recorder:         ctx.Recorder(garbagecollector.ControllerName),
		DiscoveryPeriod:  garbagecollector.DefaultDiscoveryPeriod,
		IgnoredResources: garbagecollector.DefaultIgnoredResources(),
	}
	return r.SetupWithManager(ctx.Manager, workers)
}
