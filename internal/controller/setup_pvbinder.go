package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/index"
)

// pvBinderFlags are the flags only persistentvolume-binder-controller acts on.
var pvBinderFlags = []string{"pvclaimbinder-sync-period", "enable-dynamic-provisioning"}

// setupPVBinder runs persistentvolume-binder-controller with upstream's client name, its
// --pvclaimbinder-sync-period resync and --enable-dynamic-provisioning.
func setupPVBinder(ctx *Context) error {
	// Pods by claim name, for the WaitForPodScheduled Event.
	if err := ctx.Index(&corev1.Pod{}, index.PodClaimName, index.PodClaimNameOf); err != nil {
		return err
	}
	cl, err := ctx.Client(pvbinder.ClientName)
	if err != nil {
		return err
	}
	b := &pvbinder.Binder{
		Client:              cl,
		APIReader:           ctx.Manager.GetAPIReader(),
		Recorder:            ctx.Recorder(pvbinder.EventSource),
		SyncPeriod:          ctx.Options.Duration("pvclaimbinder-sync-period"),
		DynamicProvisioning: ctx.Options.Bool("enable-dynamic-provisioning"),
	}
	return b.SetupWithManager(ctx.Manager)
}
