package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/statefulset"
	"github.com/kcm/kcm/internal/index"
)

// setupStatefulSet runs statefulset-controller with upstream's client name and
// --concurrent-statefulset-syncs workers (default 5).
func setupStatefulSet(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	if err := ctx.Index(&appsv1.ControllerRevision{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	cl, err := ctx.Client(statefulset.ControllerName)
	if err != nil {
		return err
	}
	r := &statefulset.Reconciler{
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Recorder:  ctx.Recorder(statefulset.ControllerName),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-statefulset-syncs", 5))
}
