package devicetainteviction

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metrics of the controller: the pods it deleted, and how long after their
// eviction became due (the taint's time plus the toleration's seconds).
var (
	podDeletions = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "device_taint_eviction_controller",
		Name:           "pod_deletions_total",
		Help:           "Total number of Pods deleted by DeviceTaintEvictionController since its start.",
		StabilityLevel: metrics.ALPHA,
	})
	podDeletionLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "device_taint_eviction_controller",
		Name:           "pod_deletion_duration_seconds",
		Help:           "Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.",
		Buckets:        []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240},
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// registerMetrics registers the families once per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(podDeletions)
		legacyregistry.MustRegister(podDeletionLatency)
	})
}
