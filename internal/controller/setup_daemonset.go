package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/daemonset"
	"github.com/kcm/kcm/internal/index"
)

// setupDaemonSet runs daemonset-controller with upstream's client name and
// --concurrent-daemonset-syncs workers (default 2); the failed-pod backoff keeps upstream's
// 1s..15m.
func setupDaemonSet(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	if err := ctx.Index(&appsv1.ControllerRevision{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	cl, err := ctx.Client("daemon-set-controller")
	if err != nil {
		return err
	}
	r := &daemonset.Reconciler{
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Recorder:  ctx.Recorder(daemonset.ControllerName),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-daemonset-syncs", 2))
}
