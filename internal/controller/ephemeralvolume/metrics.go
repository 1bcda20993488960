package ephemeralvolume

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metrics of the controller: every claim create it sends, and those the API server
// refused. The failures' help text repeats the attempts', as upstream's does.
var (
	createAttempts = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "ephemeral_volume_controller",
		Name:           "create_total",
		Help:           "Number of PersistentVolumeClaim creation requests",
		StabilityLevel: metrics.ALPHA,
	})
	createFailures = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "ephemeral_volume_controller",
		Name:           "create_failures_total",
		Help:           "Number of PersistentVolumeClaim creation requests",
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// registerMetrics registers the families once per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(createAttempts)
		legacyregistry.MustRegister(createFailures)
	})
}
