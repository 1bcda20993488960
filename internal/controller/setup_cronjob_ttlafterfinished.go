package controller

import (
	batchv1 "k8s.io/api/batch/v1"

	"github.com/kcm/kcm/internal/controller/cronjob"
	"github.com/kcm/kcm/internal/controller/ttlafterfinished"
	"github.com/kcm/kcm/internal/index"
)

// setupCronJob runs cronjob-controller with --concurrent-cron-job-syncs workers.
func setupCronJob(ctx *Context) error {
	if err := ctx.Index(&batchv1.Job{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	cl, err := ctx.Client(cronjob.ClientName)
	if err != nil {
		return err
	}
	r := &cronjob.Reconciler{
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Recorder:  ctx.Recorder(cronjob.ControllerName),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers(cronjob.WorkersFlag, 5))
}

// setupTTLAfterFinished runs ttl-after-finished-controller with
// --concurrent-ttl-after-finished-syncs workers.
func setupTTLAfterFinished(ctx *Context) error {
	cl, err := ctx.Client(ttlafterfinished.ClientName)
	if err != nil {
		return err
	}
	r := &ttlafterfinished.Reconciler{Client: cl, APIReader: ctx.Manager.GetAPIReader()}
	return r.SetupWithManager(ctx.Manager, ctx.Workers(ttlafterfinished.WorkersFlag, 5))
}
