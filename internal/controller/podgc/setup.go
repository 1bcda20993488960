package podgc

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is pod-garbage-collector-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"podgc"},
	ClientName: "pod-garbage-collector",
	Flags:      []options.Flag{options.TerminatedPodGCThreshold},
	Indexes:    []index.Index{index.PodsByNode},
	Setup:      Setup,
}

// Setup runs pod-garbage-collector-controller with --terminated-pod-gc-threshold and
// upstream's period and quarantine.
func Setup(ctx *setup.Context) error {
	threshold := int(ctx.Int32(options.TerminatedPodGCThreshold))
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:                 cl,
		APIReader:              reader,
		Pods:                   cachedPods(ctx.Manager.GetCache()),
		TerminatedPodThreshold: threshold,
		Period:                 DefaultPeriod,
		Quarantine:             DefaultQuarantine,
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager)
}
