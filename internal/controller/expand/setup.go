package expand

import (
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is persistentvolume-expander-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"persistentvolume-expander"},
	ClientName: ClientName,
	Setup:      Setup,
}

// workers is upstream's fixed worker count (defaultWorkerCount; no flag sets it).
const workers = 10

// Setup runs persistentvolume-expander-controller. It has no flags: upstream's constructor
// reads only the volume plugin configuration, none of which concerns expansion.
// RecoverVolumeExpansionFailure is GA and locked on in v1.37, so its behaviour is the only one.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, APIReader: reader, Recorder: ctx.Recorder(EventSource)}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/volume/expand/expand_controller.go:114.
var newQueue = setup.Queue("volume_expand")
