package endpointslicemirroring

import (
	"math"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// subsystem is upstream's prefix of the controller's families
// (pkg/controller/endpointslicemirroring/metrics).
const subsystem = "endpoint_slice_mirroring_controller"

// perSync is a histogram of a count per sync, with upstream's buckets (2 to 32768).
func perSync(name, help string) *metrics.HistogramVec {
	return metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           name,
		Help:           help,
		StabilityLevel: metrics.ALPHA,
		Buckets:        metrics.ExponentialBuckets(2, 2, 15),
	}, []string{})
}

func gauge(name, help string) *metrics.GaugeVec {
	return metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           name,
		Help:           help,
		StabilityLevel: metrics.ALPHA,
	}, []string{})
}

var (
	endpointsAddedPerSync   = perSync("endpoints_added_per_sync", "Number of endpoints added on each Endpoints sync")
	endpointsUpdatedPerSync = perSync("endpoints_updated_per_sync", "Number of endpoints updated on each Endpoints sync")
	endpointsRemovedPerSync = perSync("endpoints_removed_per_sync", "Number of endpoints removed on each Endpoints sync")
	addressesSkippedPerSync = perSync("addresses_skipped_per_sync",
		"Number of addresses skipped on each Endpoints sync due to being invalid or exceeding MaxEndpointsPerSubset")
	endpointsSyncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "endpoints_sync_duration",
		Help:           "Duration of syncEndpoints() in seconds",
		StabilityLevel: metrics.ALPHA,
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
	}, []string{})
	endpointsDesired      = gauge("endpoints_desired", "Number of endpoints desired")
	numEndpointSlices     = gauge("num_endpoint_slices", "Number of EndpointSlices")
	desiredEndpointSlices = gauge("desired_endpoint_slices",
		"Number of EndpointSlices that would exist with perfect endpoint allocation")
	// sliceChanges counts slice writes by operation: create, update, delete.
	sliceChanges = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "changes",
		Help:           "Number of EndpointSlice changes",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
)

var registerOnce sync.Once

// registerMetrics registers upstream's families in the legacy registry kcm's /metrics
// serves, once per process as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(endpointsAddedPerSync, endpointsUpdatedPerSync, endpointsRemovedPerSync,
			addressesSkippedPerSync, endpointsSyncDuration, endpointsDesired, numEndpointSlices,
			desiredEndpointSlices, sliceChanges)
	})
}

// sizeCache keeps each mirrored Endpoints' group sizes, from which the three gauges are
// totals: endpoints desired, slices there will be, and slices there would be with every
// slice full (maxPerSlice endpoints, which upstream takes from --mirroring-max-endpoints-
// per-subset).
type sizeCache struct {
	maxPerSlice int

	mu        sync.Mutex
	endpoints int
	groups    map[types.NamespacedName]map[string]GroupSize
}

func newSizeCache(maxPerSlice int) *sizeCache {
	return &sizeCache{maxPerSlice: maxPerSlice, groups: map[types.NamespacedName]map[string]GroupSize{}}
}

// set records the Endpoints' groups as a sync planned them.
func (c *sizeCache) set(key types.NamespacedName, groups map[string]GroupSize) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endpoints += countEndpoints(groups) - countEndpoints(c.groups[key])
	c.groups[key] = groups
	c.publish()
}

// forget drops an Endpoints whose slices are deleted.
func (c *sizeCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	groups, ok := c.groups[key]
	if !ok {
		return
	}
	c.endpoints -= countEndpoints(groups)
	delete(c.groups, key)
	c.publish()
}

func (c *sizeCache) publish() {
	actual, desired := 0, 0
	for _, groups := range c.groups {
		for _, g := range groups {
			actual += g.Slices
			desired += int(math.Ceil(float64(g.Endpoints) / float64(c.maxPerSlice)))
		}
	}
	numEndpointSlices.WithLabelValues().Set(float64(actual))
	desiredEndpointSlices.WithLabelValues().Set(float64(desired))
	endpointsDesired.WithLabelValues().Set(float64(c.endpoints))
}

func countEndpoints(groups map[string]GroupSize) int {
	n := 0
	for _, g := range groups {
		n += g.Endpoints
	}
	return n
}
