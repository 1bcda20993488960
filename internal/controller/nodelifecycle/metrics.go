package nodelifecycle

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's node_collector metrics: the zones' health as the zone passes see it, the
// NoExecute taints the tainting passes put on (upstream's "evictions"), and how long node
// health updates take.
var (
	zoneHealth = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "node_collector",
		Name:           "zone_health",
		Help:           "Gauge measuring percentage of healthy nodes per zone.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"zone"})
	zoneSize = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "node_collector",
		Name:           "zone_size",
		Help:           "Gauge measuring number of registered Nodes per zones.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"zone"})
	unhealthyNodes = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "node_collector",
		Name:           "unhealthy_nodes_in_zone",
		Help:           "Gauge measuring number of not Ready Nodes per zones.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"zone"})
	evictionsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "node_collector",
		Name:           "evictions_total",
		Help:           "Number of Node evictions that happened since current instance of NodeController started.",
		StabilityLevel: metrics.STABLE,
	}, []string{"zone"})
	updateNodeHealthDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "node_collector",
		Name:           "update_node_health_duration_seconds",
		Help:           "Duration in seconds for NodeController to update the health of a single node.",
		Buckets:        metrics.ExponentialBuckets(0.001, 4, 8),
		StabilityLevel: metrics.ALPHA,
	})
	updateAllNodesHealthDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "node_collector",
		Name:           "update_all_nodes_health_duration_seconds",
		Help:           "Duration in seconds for NodeController to update the health of all nodes.",
		Buckets:        metrics.ExponentialBuckets(0.01, 4, 8),
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// registerMetrics registers the families once per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(zoneHealth)
		legacyregistry.MustRegister(zoneSize)
		legacyregistry.MustRegister(unhealthyNodes)
		legacyregistry.MustRegister(evictionsTotal)
		legacyregistry.MustRegister(updateNodeHealthDuration)
		legacyregistry.MustRegister(updateAllNodesHealthDuration)
	})
}

// recordZones sets the zone gauges from what a zone pass observed, as upstream's
// handleDisruption: size, percentage of Ready nodes and count of the others for each zone
// with counted nodes, and an empty, healthy zone for each of the zones that had some
// before (gone, the zone's series stays at 0 nodes, 100%).
func recordZones(ready map[string][]corev1.ConditionStatus, gone []string) {
	for k, statuses := range ready {
		notReady := 0
		for _, s := range statuses {
			if s != corev1.ConditionTrue {
				notReady++
			}
		}
		zoneSize.WithLabelValues(k).Set(float64(len(statuses)))
		zoneHealth.WithLabelValues(k).Set(float64(100*(len(statuses)-notReady)) / float64(len(statuses)))
		unhealthyNodes.WithLabelValues(k).Set(float64(notReady))
	}
	for _, k := range gone {
		zoneSize.WithLabelValues(k).Set(0)
		zoneHealth.WithLabelValues(k).Set(100)
		unhealthyNodes.WithLabelValues(k).Set(0)
	}
}
