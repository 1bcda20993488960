package csrcleaner

import "github.com/kcm/kcm/internal/setup"

// Descriptor is certificatesigningrequest-cleaner-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"csrcleaner"},
	ClientName: "certificate-controller",
	Setup:      Setup,
}

// workers is upstream's: one, and no flag.
const workers = 1

// Setup runs certificatesigningrequest-cleaner-controller.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}
