package storageversiongc

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is storageversion-garbage-collector-controller as kcm's registry knows it: on
// by default, but only with both APIServerIdentity and StorageVersionAPI (alpha, off), as
// upstream.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	Aliases:      []string{"storage-version-gc"},
	FeatureGates: []featuregate.Feature{features.APIServerIdentity, features.StorageVersionAPI},
	ClientName:   ClientName,
	Setup:        Setup,
}

// Setup runs storageversion-garbage-collector-controller. As upstream's, it is set up
// whether or not the API server serves internal.apiserver.k8s.io/v1alpha1 (the gates are
// kcm's own, not the API server's): until it does, its StorageVersion watch waits, logging,
// and the controller does nothing, without stopping kcm.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, APIReader: reader}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/storageversiongc/gc_controller.go:72.
var newQueue = setup.Queue("storage_version_garbage_collector_storageversions")

// newLeaseQueue names the work queue of ControllerName+"-leases" as upstream names its own:
// pkg/controller/storageversiongc/gc_controller.go:68.
var newLeaseQueue = setup.Queue("storage_version_garbage_collector_leases")
