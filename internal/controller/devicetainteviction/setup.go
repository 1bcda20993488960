package devicetainteviction

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is device-taint-eviction-controller as kcm's registry knows it: on by default
// behind upstream's two gates (both GA in v1.37), no aliases.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.DynamicResourceAllocation, features.DRADeviceTaints},
	ClientName:   ClientName,
	Flags:        []options.Flag{options.ConcurrentDeviceTaintEvictionSyncs},
	Indexes:      []index.Index{sliceIndex, claimIndex, groupIndex},
	Setup:        Setup,
}

// Setup runs the controller with --concurrent-device-taint-eviction-syncs workers; rules
// (eviction by and status of DeviceTaintRules) follow DRADeviceTaintRules, as upstream.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	registerMetrics()
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(ControllerName),
		Rules:     ctx.Enabled(features.DRADeviceTaintRules),
		PodGroups: ctx.Enabled(features.DRAWorkloadResourceClaims),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, ctx.Workers(options.ConcurrentDeviceTaintEvictionSyncs))
}
