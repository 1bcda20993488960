package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/index"
)

// setupJob runs job-controller with upstream's client name and --concurrent-job-syncs
// workers (default 5); pod backoff and batching keep upstream's production values.
func setupJob(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	cl, err := ctx.Client("job-controller")
	if err != nil {
		return err
	}
	r := &job.Reconciler{
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Recorder:  ctx.Recorder(job.ControllerName),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-job-syncs", 5))
}
