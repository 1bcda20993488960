package job

import (
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is job-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:        ControllerName,
	Aliases:     []string{"job"},
	ClientName:  "job-controller",
	Flags:       []options.Flag{options.ConcurrentJobSyncs},
	Indexes:     []index.Index{index.PodsByController},
	Convergence: &Convergence,
	Setup:       Setup,
}

// Setup runs job-controller with --concurrent-job-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentJobSyncs)
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(ControllerName),

		ClearStartTimeOnSuspend: ctx.Enabled(features.MutableSchedulingDirectivesForSuspendedJobs),
	}
	if ctx.Enabled(features.StaleControllerConsistencyJob) {
		r.Stale = staleGuard.Guard(ctx.Manager.GetCache())
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/job/job_controller.go:262.
var newQueue = setup.Queue("job")

// newOrphanQueue names the work queue of orphanControllerName as upstream names its own:
// pkg/controller/job/job_controller.go:263.
var newOrphanQueue = setup.Queue("job_orphan_pod")
