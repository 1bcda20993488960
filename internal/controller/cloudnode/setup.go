package cloudnode

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/cloud"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is cloud-node-controller (cloud-controller-manager's loop, k8s.io/cloud-provider
// v0.37.1) as kcm's registry knows it: on by default, running only with a provider that
// looks instances up, and acting as node-controller, as upstream's cloud-controller-manager
// starts it.
var Descriptor = setup.Descriptor{
	Name:          ControllerName,
	Aliases:       []string{"cloud-node"},
	ClientName:    "node-controller",
	CloudProvider: true,
	Flags: append(append([]options.Flag{}, cloud.Flags...),
		options.ConcurrentNodeSyncs, options.ConcurrentNodeStatusUpdates, options.NodeStatusUpdateFrequency),
	Setup: Setup,
}

// eventSource is upstream's Event source of the controller.
const eventSource = "cloud-node-controller"

// Setup checks the flags as upstream's cloud-controller-manager does and runs the controller
// with the --cloud-provider's provider. Without one it does not run; with one that has
// neither InstancesV2 nor Instances (kcm's pool), it logs so and does not run, as upstream's
// startCloudNodeController, whose constructor then fails and which only warns.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentNodeSyncs)
	statusWorkers := ctx.Workers(options.ConcurrentNodeStatusUpdates)
	frequency := ctx.Duration(options.NodeStatusUpdateFrequency)
	provider, err := cloud.Provider(ctx)
	if err != nil {
		return err
	}
	// Upstream's NodeControllerOptions.Validate, which stops cloud-controller-manager (kcm's
	// flag parsing already refuses negative worker counts).
	if workers <= 0 {
		return errors.New("concurrent-node-syncs must be a positive number")
	}
	// Upstream's ApplyTo: 0 means as many as --concurrent-node-syncs.
	if statusWorkers == 0 {
		statusWorkers = workers
	}
	_, instances := provider.Instances()
	_, instancesV2 := provider.InstancesV2()
	if !instances && !instancesV2 {
		log.Log.WithName("controllers").Info("Warning: failed to start cloud node controller: cloud provider does not support instances",
			"controller", ControllerName, "cloudProvider", provider.ProviderName())
		return setup.ErrSkipped
	}
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client: cl, APIReader: reader, Cloud: provider, Recorder: ctx.Recorder(eventSource),
		StatusUpdateFrequency: frequency, Workers: workers, StatusWorkers: statusWorkers,
	}
	setup.Apply(ctx, r)
	if err := r.SetupWithManager(ctx.Manager); err != nil {
		return err
	}
	// running_managed_controllers{name="cloud-node"}, as upstream's Run reports it (under
	// kcm's manager label, not cloud-controller-manager's).
	return ctx.Manager.Add(procmetrics.RunningController("cloud-node"))
}

// newQueue names the work queue as upstream names its own: k8s.io/cloud-provider v0.37.1
// controllers/node/node_controller.go:142.
var newQueue = setup.Queue("Nodes")
