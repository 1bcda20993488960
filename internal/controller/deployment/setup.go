package deployment

import (
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is deployment-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:        ControllerName,
	Aliases:     []string{"deployment"},
	ClientName:  "deployment-controller",
	Flags:       []options.Flag{options.ConcurrentDeploymentSyncs},
	Indexes:     []index.Index{index.ReplicaSetsByController, index.PodsByController},
	Convergence: &Convergence,
	Setup:       Setup,
}

// Setup runs deployment-controller with --concurrent-deployment-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentDeploymentSyncs)
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(ControllerName),

		TerminatingReplicas: ctx.Enabled(features.DeploymentReplicaSetTerminatingReplicas),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/deployment/deployment_controller.go:114.
var newQueue = setup.Queue("deployment")
