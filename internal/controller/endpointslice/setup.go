package endpointslice

import (
	"fmt"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is endpointslice-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"endpointslice"},
	ClientName: ControllerName,
	Flags: []options.Flag{options.ConcurrentServiceEndpointSyncs, options.MaxEndpointsPerSlice,
		options.EndpointsliceUpdatesBatchPeriod},
	Convergence: &Convergence,
	Setup:       Setup,
}

// eventSource: upstream reports its Events as endpoint-slice-controller, not as its client.
const eventSource = "endpoint-slice-controller"

// Setup runs endpointslice-controller with --concurrent-service-endpoint-syncs workers,
// --max-endpoints-per-slice (1 to 1000, as upstream validates it) and
// --endpointslice-updates-batch-period.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentServiceEndpointSyncs)
	maxPerSlice := ctx.Int32(options.MaxEndpointsPerSlice)
	batch := ctx.Duration(options.EndpointsliceUpdatesBatchPeriod)
	if maxPerSlice < 1 || maxPerSlice > 1000 {
		return fmt.Errorf("max-endpoints-per-slice must be between 1 and 1000, but got %d", maxPerSlice)
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
		Client:               cl,
		Clientset:            cs,
		Recorder:             ctx.Recorder(eventSource),
		MaxEndpointsPerSlice: int(maxPerSlice),
		BatchPeriod:          batch,
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/endpointslice/endpointslice_controller.go:114.
var newQueue = setup.Queue("endpoint_slice")
