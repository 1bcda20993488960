package cronjob

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is cronjob-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"cronjob"},
	ClientName: ClientName,
	Flags:      []options.Flag{options.ConcurrentCronJobSyncs},
	Indexes:    []index.Index{index.JobsByController},
	Setup:      Setup,
}

// Setup runs cronjob-controller with --concurrent-cron-job-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentCronJobSyncs)
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(ControllerName),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/cronjob/cronjob_controllerv2.go:97.
var newQueue = setup.Queue("cronjob")
