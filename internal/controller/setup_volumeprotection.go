package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/ephemeralvolume"
	"github.com/kcm/kcm/internal/controller/pvcprotection"
	"github.com/kcm/kcm/internal/controller/pvprotection"
	"github.com/kcm/kcm/internal/index"
)

// setupPVCProtection runs persistentvolumeclaim-protection-controller with upstream's client
// name and one worker. It tracks the Unused condition, as upstream does with
// PersistentVolumeClaimUnusedSinceTime (beta, on by default in v1.37).
func setupPVCProtection(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.PodClaimName, index.PodClaimNameOf); err != nil {
		return err
	}
	cl, err := ctx.Client(pvcprotection.ClientName)
	if err != nil {
		return err
	}
	r := &pvcprotection.Reconciler{Client: cl, APIReader: ctx.Manager.GetAPIReader(), TrackUnused: true}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("", 1))
}

// setupPVProtection runs persistentvolume-protection-controller with upstream's client name
// and one worker.
func setupPVProtection(ctx *Context) error {
	cl, err := ctx.Client(pvprotection.ClientName)
	if err != nil {
		return err
	}
	r := &pvprotection.Reconciler{Client: cl}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("", 1))
}

// setupEphemeralVolume runs ephemeral-volume-controller with upstream's client name and
// --concurrent-ephemeralvolume-syncs workers (default 5).
func setupEphemeralVolume(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.PodClaimName, index.PodClaimNameOf); err != nil {
		return err
	}
	cl, err := ctx.Client(ephemeralvolume.ControllerName)
	if err != nil {
		return err
	}
	r := &ephemeralvolume.Reconciler{Client: cl, Recorder: ctx.Recorder(ephemeralvolume.EventSource)}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-ephemeralvolume-syncs", 5))
}
