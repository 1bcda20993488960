package resourcepoolstatusrequest

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is resourcepoolstatusrequest-controller as kcm's registry knows it: behind
// DRAResourcePoolStatus (alpha, off by default in v1.37), as upstream.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.DRAResourcePoolStatus},
	ClientName:   ClientName,
	Setup:        Setup,
}

// workers is upstream's fixed worker count: one is enough for requests made by hand.
const workers = 1

// Setup runs resourcepoolstatusrequest-controller. DeviceTaintRules count only with
// DRADeviceTaintRules (GA, on by default in v1.37), as upstream: without it the API server
// may not serve them.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, TaintRules: ctx.Enabled(features.DRADeviceTaintRules)}
	setup.Apply(ctx, r)
	registerMetrics()
	return r.SetupWithManager(ctx.Manager, workers)
}
