package cloudnode

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's families of the cloud node controller (k8s.io/cloud-provider
// controllers/node/metrics.go): how long after its creation a node lost the cloud taint, and
// finished its first sync.
var (
	taintRemovalDelay = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "node_controller",
		Name:           "cloud_provider_taint_removal_delay_seconds",
		Help:           "Number of seconds after node creation when NodeController removed the cloud-provider taint of a single node.",
		Buckets:        metrics.ExponentialBuckets(1, 4, 6), // 1s -> ~17m
		StabilityLevel: metrics.ALPHA,
	})
	initialSyncDelay = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "node_controller",
		Name:           "initial_node_sync_delay_seconds",
		Help:           "Number of seconds after node creation when NodeController finished the initial synchronization of a single node.",
		Buckets:        metrics.ExponentialBuckets(1, 4, 6), // 1s -> ~17m
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// registerMetrics registers the families once per process. Upstream registers them when the
// cloud-controller-manager binary starts; kcm, which runs the loop only with a provider,
// when the controller is set up.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(taintRemovalDelay)
		legacyregistry.MustRegister(initialSyncDelay)
	})
}
