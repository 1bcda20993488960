package resourceclaim

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is resourceclaim-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	Aliases:      []string{"resource-claim-controller"},
	FeatureGates: []featuregate.Feature{features.DynamicResourceAllocation},
	ClientName:   ClientName,
	Flags:        []options.Flag{options.ConcurrentResourceclaimSyncs},
	Indexes:      []index.Index{podsByClaim, podsByClaimTemplate, claimsByController},
	Setup:        Setup,
}

// Setup runs resourceclaim-controller with --concurrent-resourceclaim-syncs workers for pods
// and as many for claims, with the DRA gates upstream's constructor reads.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentResourceclaimSyncs)
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(EventSource),
		Features: Features{
			AdminAccess:            ctx.Enabled(features.DRAAdminAccess),
			PrioritizedList:        ctx.Enabled(features.DRAPrioritizedList),
			GenericWorkload:        ctx.Enabled(features.GenericWorkload),
			WorkloadResourceClaims: ctx.Enabled(features.DRAWorkloadResourceClaims),
		},
	}
	setup.Apply(ctx, r)
	registerMetrics(ctx.Manager.GetCache())
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/resourceclaim/controller.go:240.
var newQueue = setup.Queue("resource_claim")
