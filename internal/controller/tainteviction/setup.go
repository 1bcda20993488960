package tainteviction

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is taint-eviction-controller as kcm's registry knows it. Upstream's gate
// SeparateTaintEvictionController is GA and locked on.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.SeparateTaintEvictionController},
	// As upstream, the controller works with the node-controller's client.
	ClientName: ClientName,
	Indexes:    []index.Index{index.PodsByNode},
	Setup:      Setup,
}

// Setup runs taint-eviction-controller with upstream's fixed worker count.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	registerMetrics()
	r := &Reconciler{Client: cl, Recorder: ctx.Recorder(ControllerName),
		ComparisonOperators: ctx.Enabled(features.TaintTolerationComparisonOperators)}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, Workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/tainteviction/taint_eviction.go:221.
var newQueue = setup.Queue("noexec_taint_pod")
