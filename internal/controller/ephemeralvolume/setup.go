package ephemeralvolume

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is ephemeral-volume-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"ephemeral-volume"},
	ClientName: ControllerName,
	Flags:      []options.Flag{options.ConcurrentEphemeralvolumeSyncs},
	Indexes:    []index.Index{index.PodsByClaim},
	Setup:      Setup,
}

// Setup runs ephemeral-volume-controller with --concurrent-ephemeralvolume-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentEphemeralvolumeSyncs)
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	registerMetrics()
	r := &Reconciler{Client: cl, Recorder: ctx.Recorder(EventSource)}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/volume/ephemeral/controller.go:94.
var newQueue = setup.Queue("ephemeral_volume")
