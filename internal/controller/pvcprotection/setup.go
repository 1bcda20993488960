package pvcprotection

import (
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is persistentvolumeclaim-protection-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"pvc-protection"},
	ClientName: ClientName,
	Indexes:    []index.Index{index.PodsByClaim},
	Setup:      Setup,
}

// workers is upstream's fixed worker count.
const workers = 1

// Setup runs persistentvolumeclaim-protection-controller. It tracks the Unused condition
// when PersistentVolumeClaimUnusedSinceTime is on (beta, on by default in v1.37), as upstream.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, APIReader: reader, TrackUnused: ctx.Enabled(features.PersistentVolumeClaimUnusedSinceTime)}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/volume/pvcprotection/pvc_protection_controller.go:130.
var newQueue = setup.Queue("pvcprotection")
