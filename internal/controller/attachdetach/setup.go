package attachdetach

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is persistentvolume-attach-detach-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"attachdetach"},
	ClientName: ClientName,
	Flags: []options.Flag{options.AttachDetachReconcileSyncPeriod, options.DisableAttachDetachReconcileSync,
		options.DisableForceDetachOnTimeout},
	// Pods by node (a node's pods) and by claim (the nodes a claim's or volume's change
	// concerns); VolumeAttachments by node and by volume (another node holding a volume).
	Indexes: []index.Index{index.PodsByNode, index.PodsByClaim, attachmentsByNode, attachmentsByVolume},
	Setup:   Setup,
}

// workers: upstream runs attach and detach operations concurrently, one per volume; kcm
// reconciles several nodes at once.
const workers = 5

// Setup runs persistentvolume-attach-detach-controller with
// --attach-detach-reconcile-sync-period (unless --disable-attach-detach-reconcile-sync) and
// --disable-force-detach-on-timeout.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:                      cl,
		APIReader:                   reader,
		Recorder:                    ctx.Recorder(EventSource),
		SyncPeriod:                  ctx.Duration(options.AttachDetachReconcileSyncPeriod),
		DisableForceDetachOnTimeout: ctx.Bool(options.DisableForceDetachOnTimeout),
	}
	if ctx.Bool(options.DisableAttachDetachReconcileSync) {
		r.SyncPeriod = 0
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}
