package controller

import (
	"github.com/kcm/kcm/internal/controller/endpoints"
	"github.com/kcm/kcm/internal/controller/endpointslicemirroring"
)

var (
	endpointsFlags              = []string{"concurrent-endpoint-syncs", "endpoint-updates-batch-period"}
	endpointSliceMirroringFlags = []string{"mirroring-concurrent-service-endpoint-syncs", "mirroring-max-endpoints-per-subset", "mirroring-endpointslice-updates-batch-period"}
)

// setupEndpoints runs endpoints-controller with upstream's client name and
// --concurrent-endpoint-syncs workers (default 5).
func setupEndpoints(ctx *Context) error {
	cl, err := ctx.Client("endpoint-controller")
	if err != nil {
		return err
	}
	r := &endpoints.Reconciler{
		Client:      cl,
		Recorder:    ctx.Recorder(endpoints.EventSource),
		BatchPeriod: ctx.Options.Duration("endpoint-updates-batch-period"),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-endpoint-syncs", 5))
}

// setupEndpointSliceMirroring runs endpointslice-mirroring-controller with upstream's client
// name, --mirroring-concurrent-service-endpoint-syncs workers (default 5) and
// --mirroring-max-endpoints-per-subset (default 1000), refusing values upstream refuses.
func setupEndpointSliceMirroring(ctx *Context) error {
	cl, err := ctx.Client("endpointslicemirroring-controller")
	if err != nil {
		return err
	}
	// Not a --concurrent-* flag: read by name.
	workers := int(ctx.Options.Int32("mirroring-concurrent-service-endpoint-syncs"))
	maxPerSubset := int(ctx.Options.Int32("mirroring-max-endpoints-per-subset"))
	if err := endpointslicemirroring.ValidateFlags(workers, maxPerSubset); err != nil {
		return err
	}
	r := &endpointslicemirroring.Reconciler{
		Client:                cl,
		Recorder:              ctx.Recorder(endpointslicemirroring.EventSource),
		MaxEndpointsPerSubset: maxPerSubset,
		BatchPeriod:           ctx.Options.Duration("mirroring-endpointslice-updates-batch-period"),
	}
	return r.SetupWithManager(ctx.Manager, workers)
}
