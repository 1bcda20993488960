package nodeipam

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's cidrset metrics, by cluster CIDR. The names are upstream's, "cirdset" typo and
// the tries histogram's borrowed help text included.
var (
	cidrSetAllocations = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "node_ipam_controller",
		Name:           "cidrset_cidrs_allocations_total",
		Help:           "Counter measuring total number of CIDR allocations.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"clusterCIDR"})
	cidrSetReleases = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "node_ipam_controller",
		Name:           "cidrset_cidrs_releases_total",
		Help:           "Counter measuring total number of CIDR releases.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"clusterCIDR"})
	cidrSetMaxCIDRs = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "node_ipam_controller",
		Name:           "cirdset_max_cidrs",
		Help:           "Maximum number of CIDRs that can be allocated.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"clusterCIDR"})
	cidrSetUsage = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "node_ipam_controller",
		Name:           "cidrset_usage_cidrs",
		Help:           "Gauge measuring percentage of allocated CIDRs.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"clusterCIDR"})
	cidrSetTriesPerRequest = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "node_ipam_controller",
		Name:           "cidrset_allocation_tries_per_request",
		Help:           "Number of endpoints added on each Service sync",
		Buckets:        metrics.ExponentialBuckets(1, 5, 5),
		StabilityLevel: metrics.ALPHA,
	}, []string{"clusterCIDR"})
	registerOnce sync.Once
)

// registerMetrics registers the families once per process, as upstream does when it makes
// its first CIDR set.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(cidrSetAllocations)
		legacyregistry.MustRegister(cidrSetReleases)
		legacyregistry.MustRegister(cidrSetMaxCIDRs)
		legacyregistry.MustRegister(cidrSetUsage)
		legacyregistry.MustRegister(cidrSetTriesPerRequest)
	})
}

// recordUsage sets the share of the set's blocks in use (a fraction, despite upstream's help).
func (s *cidrSet) recordUsage() {
	cidrSetUsage.WithLabelValues(s.label).Set(float64(s.used) / float64(s.max))
}
