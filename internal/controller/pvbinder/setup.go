package pvbinder

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is persistentvolume-binder-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"persistentvolume-binder"},
	ClientName: ClientName,
	Flags:      []options.Flag{options.PvclaimbinderSyncPeriod, options.EnableDynamicProvisioning},
	// Pods by claim name, for the WaitForPodScheduled Event; unbound claims by class, for
	// the volume that may bind them.
	Indexes: []index.Index{index.PodsByClaim, claimsWaitingByClass},
	Setup:   Setup,
}

// Setup runs persistentvolume-binder-controller with --pvclaimbinder-sync-period and
// --enable-dynamic-provisioning.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	b := &Binder{
		Client:              cl,
		APIReader:           reader,
		Recorder:            ctx.Recorder(EventSource),
		SyncPeriod:          ctx.Duration(options.PvclaimbinderSyncPeriod),
		DynamicProvisioning: ctx.Bool(options.EnableDynamicProvisioning),
	}
	setup.Apply(ctx, b)
	return b.SetupWithManager(ctx.Manager)
}
