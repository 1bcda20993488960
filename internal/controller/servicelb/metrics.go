package servicelb

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metric families of the service controller (controllers/service/metrics.go),
// with its names, help and buckets.
var (
	loadBalancerSyncCount = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "service_controller",
		Name:           "loadbalancer_sync_total",
		Help:           "A metric counting the amount of times any load balancer has been configured, as an effect of service/node changes on the cluster",
		StabilityLevel: metrics.ALPHA,
	})
	nodeSyncErrorCount = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "service_controller",
		Name:           "nodesync_error_total",
		Help:           "A metric counting the amount of times any load balancer has been configured and errored, as an effect of node changes on the cluster",
		StabilityLevel: metrics.ALPHA,
	})
	// nodeSyncLatency: upstream observes one pass over every Service after a node change;
	// kcm's node changes are queued per Service, so it observes each Service's node sync.
	nodeSyncLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "service_controller",
		Name:           "nodesync_latency_seconds",
		Help:           "A metric measuring the latency for nodesync which updates loadbalancer hosts on cluster node updates.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	updateLoadBalancerHostLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "service_controller",
		Name:           "update_loadbalancer_host_latency_seconds",
		Help:           "A metric measuring the latency for updating each load balancer hosts.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// registerMetrics adds the families to the legacy registry once per process, as upstream's
// constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(loadBalancerSyncCount, nodeSyncLatency, nodeSyncErrorCount, updateLoadBalancerHostLatency)
	})
}
