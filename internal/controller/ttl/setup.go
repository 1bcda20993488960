package ttl

import "github.com/kcm/kcm/internal/setup"

// Descriptor is ttl-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"ttl"},
	ClientName: "ttl-controller",
	Setup:      Setup,
}

// workers is upstream's fixed worker count: ttl-controller has no flag.
const workers = 5

// Setup runs ttl-controller.
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
// pkg/controller/ttl/ttl_controller.go:86.
var newQueue = setup.Queue("ttlcontroller")
