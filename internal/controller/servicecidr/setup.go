package servicecidr

import (
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is service-cidr-controller as kcm's registry knows it: no aliases, on by
// default, only with the MultiCIDRServiceAllocator gate (GA in v1.37), as upstream.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.MultiCIDRServiceAllocator},
	ClientName:   ClientName,
	Setup:        Setup,
}

// workers is upstream's fixed worker count.
const workers = 5

// Setup runs service-cidr-controller.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, Recorder: ctx.Recorder(ControllerName), Clock: clock.RealClock{}, GracePeriod: DeletionGracePeriod}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/servicecidrs/servicecidrs_controller.go:83.
var newQueue = setup.Queue("ipaddresses")
