package controller

import (
	"fmt"

	"github.com/kcm/kcm/internal/controller/endpointslice"
)

// endpointSliceFlags are the flags only endpointslice-controller acts on.
var endpointSliceFlags = []string{"concurrent-service-endpoint-syncs", "max-endpoints-per-slice", "endpointslice-updates-batch-period"}

// setupEndpointSlice runs endpointslice-controller with upstream's client name,
// --concurrent-service-endpoint-syncs workers (default 5), --max-endpoints-per-slice (100,
// between 1 and 1000 as upstream validates) and --endpointslice-updates-batch-period.
func setupEndpointSlice(ctx *Context) error {
	maxPerSlice := ctx.Options.Int32("max-endpoints-per-slice")
	if maxPerSlice < 1 || maxPerSlice > 1000 {
		return fmt.Errorf("max-endpoints-per-slice must be between 1 and 1000, but got %d", maxPerSlice)
	}
	cl, err := ctx.Client(endpointslice.ControllerName)
	if err != nil {
		return err
	}
	// Upstream reports its Events as endpoint-slice-controller, not as its client name.
	r := &endpointslice.Reconciler{
		Client:               cl,
		Recorder:             ctx.Recorder("endpoint-slice-controller"),
		MaxEndpointsPerSlice: int(maxPerSlice),
		BatchPeriod:          ctx.Options.Duration("endpointslice-updates-batch-period"),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-service-endpoint-syncs", 5))
}
