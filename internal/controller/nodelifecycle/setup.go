package nodelifecycle

import (
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is node-lifecycle-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"nodelifecycle"},
	ClientName: "node-controller",
	Flags: []options.Flag{
		options.NodeMonitorPeriod, options.NodeMonitorGracePeriod, options.NodeStartupGracePeriod,
		options.NodeEvictionRate, options.SecondaryNodeEvictionRate, options.LargeClusterSizeThreshold,
		options.UnhealthyZoneThreshold,
	},
	Indexes: []index.Index{index.PodsByNode},
	Setup:   Setup,
}

// workers: upstream syncs node health with 8 workers.
const workers = 8

// Setup runs node-lifecycle-controller with upstream's node health flags.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	registerMetrics()
	r := &Reconciler{
		Client:                 cl,
		Leases:                 cl,
		APIReader:              reader,
		LeaseCircuitBreaker:    ctx.Enabled(features.NodeControllerLeaseCircuitBreaker),
		Recorder:               ctx.Recorder(EventSource),
		MonitorPeriod:          ctx.Duration(options.NodeMonitorPeriod),
		MonitorGracePeriod:     ctx.Duration(options.NodeMonitorGracePeriod),
		StartupGracePeriod:     ctx.Duration(options.NodeStartupGracePeriod),
		EvictionRate:           ctx.Float32(options.NodeEvictionRate),
		SecondaryEvictionRate:  ctx.Float32(options.SecondaryNodeEvictionRate),
		LargeClusterThreshold:  ctx.Int32(options.LargeClusterSizeThreshold),
		UnhealthyZoneThreshold: ctx.Float32(options.UnhealthyZoneThreshold),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/nodelifecycle/node_lifecycle_controller.go:356.
var newQueue = setup.Queue("node_lifecycle_controller")
