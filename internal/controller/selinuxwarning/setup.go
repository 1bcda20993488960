package selinuxwarning

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is selinux-warning-controller as kcm's registry knows it: off by default and
// under SELinuxChangePolicy (GA and locked on in v1.37), as upstream.
var Descriptor = setup.Descriptor{
	Name:              ControllerName,
	DisabledByDefault: true,
	FeatureGates:      []featuregate.Feature{features.SELinuxChangePolicy},
	ClientName:        ControllerName,
	Indexes:           []index.Index{index.PodsByClaim},
	Setup:             Setup,
}

// workers is upstream's fixed worker count.
const workers = 1

// Setup runs selinux-warning-controller.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, Recorder: ctx.Recorder(EventSource)}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/volume/selinuxwarning/selinux_warning_controller.go:120.
var newQueue = setup.Queue("selinux_warning")
