package garbagecollector

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// resourcesSyncErrors is upstream's garbagecollector_controller_resources_sync_error_total:
// the discovery passes that found no resource, failed to start or stop a watch, or whose
// watches had not synced a discovery period after they changed.
var resourcesSyncErrors = metrics.NewCounter(
	&metrics.CounterOpts{
		Subsystem:      "garbagecollector_controller",
		Name:           "resources_sync_error_total",
		Help:           "Number of garbage collector resources sync errors",
		StabilityLevel: metrics.ALPHA,
	})

var registerOnce sync.Once

// registerMetrics registers the counter in the legacy registry kcm's /metrics serves, once
// per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(resourcesSyncErrors) })
}
