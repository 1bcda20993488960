package pvprotection

import "github.com/kcm/kcm/internal/setup"

// Descriptor is persistentvolume-protection-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"pv-protection"},
	ClientName: ClientName,
	Setup:      Setup,
}

// workers is upstream's fixed worker count.
const workers = 1

// Setup runs persistentvolume-protection-controller.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/volume/pvprotection/pv_protection_controller.go:58.
var newQueue = setup.Queue("pvprotection")
