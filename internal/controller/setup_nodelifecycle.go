package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/nodelifecycle"
	"github.com/kcm/kcm/internal/index"
)

// nodeLifecycleFlags are the upstream flags the node-lifecycle-controller reads.
var nodeLifecycleFlags = []string{
	"node-monitor-period", "node-monitor-grace-period", "node-startup-grace-period",
	"node-eviction-rate", "secondary-node-eviction-rate", "large-cluster-size-threshold",
	"unhealthy-zone-threshold",
}

func setupNodeLifecycle(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf); err != nil {
		return err
	}
	cl, err := ctx.Client("node-controller")
	if err != nil {
		return err
	}
	o := ctx.Options
	r := &nodelifecycle.Reconciler{
		Client:                 cl,
		Recorder:               ctx.Recorder(nodelifecycle.ControllerName),
		MonitorPeriod:          o.Duration("node-monitor-period"),
		MonitorGracePeriod:     o.Duration("node-monitor-grace-period"),
		StartupGracePeriod:     o.Duration("node-startup-grace-period"),
		EvictionRate:           o.Float32("node-eviction-rate"),
		SecondaryEvictionRate:  o.Float32("secondary-node-eviction-rate"),
		LargeClusterThreshold:  o.Int32("large-cluster-size-threshold"),
		UnhealthyZoneThreshold: o.Float32("unhealthy-zone-threshold"),
	}
	// Upstream syncs node health with 8 workers.
	return r.SetupWithManager(ctx.Manager, 8)
}
