package clusterroleaggregation

import "github.com/kcm/kcm/internal/setup"

// Descriptor is clusterrole-aggregation-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"clusterrole-aggregation"},
	ClientName: ControllerName,
	Setup:      Setup,
}

// workers is upstream's fixed worker count: the controller has no flag.
const workers = 5

// Setup runs clusterrole-aggregation-controller.
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
// pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go:65.
var newQueue = setup.Queue("ClusterRoleAggregator")
