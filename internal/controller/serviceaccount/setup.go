package serviceaccount

import "github.com/kcm/kcm/internal/setup"

// Descriptor is serviceaccount-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"serviceaccount"},
	ClientName: "service-account-controller",
	Setup:      Setup,
}

// workers is upstream's fixed worker count.
const workers = 1

// Setup runs serviceaccount-controller.
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
// pkg/controller/serviceaccount/serviceaccounts_controller.go:71.
var newQueue = setup.Queue("serviceaccount")
