package endpoints

import (
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is endpoints-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"endpoint"},
	ClientName: "endpoint-controller",
	Flags:      []options.Flag{options.ConcurrentEndpointSyncs, options.EndpointUpdatesBatchPeriod},
	Setup:      Setup,
}

// Setup runs endpoints-controller with --concurrent-endpoint-syncs workers and
// --endpoint-updates-batch-period.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentEndpointSyncs)
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:      cl,
		Recorder:    ctx.Recorder(EventSource),
		BatchPeriod: ctx.Duration(options.EndpointUpdatesBatchPeriod),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/endpoint/endpoints_controller.go:90.
var newQueue = setup.Queue("endpoint")
