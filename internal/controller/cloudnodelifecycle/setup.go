package cloudnodelifecycle

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/cloud"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is cloud-node-lifecycle-controller (cloud-controller-manager's loop,
// k8s.io/cloud-provider v0.37.1) as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:          ControllerName,
	Aliases:       []string{"cloud-node-lifecycle"},
	ClientName:    "node-controller",
	CloudProvider: true,
	Flags: append(append([]options.Flag{}, cloud.Flags...),
		options.NodeMonitorPeriod, options.ConcurrentNodeLifecycleSyncs),
	Setup: Setup,
}

// Setup runs the controller every --node-monitor-period with
// --concurrent-node-lifecycle-syncs workers when a provider is configured. As upstream's
// cloud-controller-manager, a provider without instance lookups, or fewer than one worker,
// is logged and the controller does not run.
func Setup(ctx *setup.Context) error {
	period := ctx.Duration(options.NodeMonitorPeriod)
	workers := ctx.Workers(options.ConcurrentNodeLifecycleSyncs)
	provider, err := cloud.Provider(ctx)
	if err != nil {
		return err
	}
	registerMetrics()
	logger := log.Log.WithName("controllers").WithValues("controller", ControllerName)
	_, instances := provider.Instances()
	_, instancesV2 := provider.InstancesV2()
	if !instances && !instancesV2 {
		logger.Info("Warning: failed to start cloud node lifecycle controller: cloud provider does not support instances",
			"cloudProvider", provider.ProviderName())
		return setup.ErrSkipped
	}
	if workers < 1 {
		logger.Info(fmt.Sprintf("Warning: failed to start cloud node lifecycle controller: concurrentNodeLifecycleSyncs must be >= 1, got %d", workers))
		return setup.ErrSkipped
	}

	// Writes through client-go (the published helpers) and the cached client share one
	// connection: one token bucket.
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	cs, err := ctx.Clientset()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		Clientset: cs,
		Recorder:  ctx.Recorder(ControllerName),
		Cloud:     provider,
		Period:    period,
		Workers:   workers,
	}
	setup.Apply(ctx, r)
	if err := r.SetupWithManager(ctx.Manager); err != nil {
		return err
	}
	// running_managed_controllers{name="cloud-node-lifecycle"}, as upstream's Run reports it.
	return ctx.Manager.Add(procmetrics.RunningController("cloud-node-lifecycle"))
}
