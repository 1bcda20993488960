package endpointslicemirroring

import (
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is endpointslice-mirroring-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"endpointslicemirroring"},
	ClientName: "endpointslicemirroring-controller",
	Flags: []options.Flag{options.MirroringConcurrentServiceEndpointSyncs, options.MirroringMaxEndpointsPerSubset,
		options.MirroringEndpointsliceUpdatesBatchPeriod},
	Setup: Setup,
}

// Setup runs endpointslice-mirroring-controller with
// --mirroring-concurrent-service-endpoint-syncs workers (default 5) and
// --mirroring-max-endpoints-per-subset (default 1000), refusing values upstream refuses.
func Setup(ctx *setup.Context) error {
	// Not a --concurrent-* flag, but a worker count all the same.
	workers := int(ctx.Int32(options.MirroringConcurrentServiceEndpointSyncs))
	maxPerSubset := int(ctx.Int32(options.MirroringMaxEndpointsPerSubset))
	batch := ctx.Duration(options.MirroringEndpointsliceUpdatesBatchPeriod)
	if err := ValidateFlags(workers, maxPerSubset); err != nil {
		return err
	}
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:                cl,
		Recorder:              ctx.Recorder(EventSource),
		MaxEndpointsPerSubset: maxPerSubset,
		BatchPeriod:           batch,
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/endpointslicemirroring/endpointslicemirroring_controller.go:99.
var newQueue = setup.Queue("endpoint_slice_mirroring")
