package noderoute

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's family (k8s.io/cloud-provider/controllers/route/metrics.go): every reconcile,
// by what triggered it (periodic, node_change) and its outcome (error when the routes or the
// nodes could not be listed, changed when a route was created or deleted, else noop).
var routeSyncs = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem:      "route_controller",
	Name:           "route_sync_total",
	Help:           "A metric counting the number of route reconciles with the cloud provider, labeled by the trigger (periodic or node_change) and the outcome (error if the reconcile failed, changed if at least one route was created or deleted, otherwise noop).",
	StabilityLevel: metrics.ALPHA,
}, []string{"outcome", "trigger"})

var registerOnce sync.Once

// registerMetrics registers the family in the legacy registry kcm's /metrics serves, once
// per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(routeSyncs) })
}

// syncOutcome is the outcome label of one reconcile.
func syncOutcome(changed bool, err error) string {
	switch {
	case err != nil:
		return "error"
	case changed:
		return "changed"
	}
	return "noop"
}
