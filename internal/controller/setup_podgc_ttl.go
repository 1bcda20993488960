package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/podgc"
	"github.com/kcm/kcm/internal/controller/ttl"
	"github.com/kcm/kcm/internal/index"
)

// setupPodGC runs pod-garbage-collector-controller with upstream's period and quarantine.
func setupPodGC(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf); err != nil {
		return err
	}
	cl, err := ctx.Client("pod-garbage-collector")
	if err != nil {
		return err
	}
	r := &podgc.Reconciler{
		Client:                 cl,
		APIReader:              ctx.Manager.GetAPIReader(),
		TerminatedPodThreshold: int(ctx.Options.Int32("terminated-pod-gc-threshold")),
		Period:                 podgc.DefaultPeriod,
		Quarantine:             podgc.DefaultQuarantine,
	}
	return r.SetupWithManager(ctx.Manager)
}

// setupTTL runs ttl-controller with upstream's 5 workers.
func setupTTL(ctx *Context) error {
	cl, err := ctx.Client("ttl-controller")
	if err != nil {
		return err
	}
	r := &ttl.Reconciler{Client: cl}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("", 5))
}
