package ttlafterfinished

import (
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is ttl-after-finished-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"ttl-after-finished"},
	ClientName: ClientName,
	Flags:      []options.Flag{options.ConcurrentTTLAfterFinishedSyncs},
	Setup:      Setup,
}

// Setup runs ttl-after-finished-controller with --concurrent-ttl-after-finished-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentTTLAfterFinishedSyncs)
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, APIReader: reader}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/ttlafterfinished/ttlafterfinished_controller.go:85.
var newQueue = setup.Queue("ttl_jobs_to_delete")
