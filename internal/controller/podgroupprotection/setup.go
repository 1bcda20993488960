package podgroupprotection

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is podgroup-protection-controller as kcm's registry knows it: behind
// GenericWorkload (beta, off by default in v1.37), as upstream.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.GenericWorkload},
	ClientName:   ClientName,
	Indexes:      []index.Index{PodsByActivePodGroup},
	Setup:        Setup,
}

// workers is upstream's fixed worker count: the controller has no flag.
const workers = 1

// Setup runs podgroup-protection-controller.
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
// pkg/controller/scheduling/podgroupprotection/podgroup_protection_controller.go:83.
var newQueue = setup.Queue("podgroupprotection")
