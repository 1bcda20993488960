package csrapproving

import (
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is certificatesigningrequest-approving-controller as kcm's registry knows it.
// Upstream runs it with the client (and ServiceAccount) certificate-controller, which the
// signing and cleaner controllers share, and no flag.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"csrapproving"},
	ClientName: "certificate-controller",
	Setup:      Setup,
}

// workers is upstream's fixed worker count.
const workers = 5

// Setup runs certificatesigningrequest-approving-controller.
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
// pkg/controller/certificates/certificate_controller.go:74.
var newQueue = setup.Queue("certificate")
