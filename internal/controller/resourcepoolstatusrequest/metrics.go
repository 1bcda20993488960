package resourcepoolstatusrequest

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metric families (pkg/controller/resourcepoolstatusrequest/metrics), with their
// names, labels, buckets and stability.
const subsystem = "resourcepoolstatusrequest_controller"

var (
	// requestsProcessed counts the requests whose status was written or failed to be.
	requestsProcessed = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "requests_processed_total",
		Help:           "Total number of ResourcePoolStatusRequests processed",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver_name"})

	// requestErrors counts the status writes that failed.
	requestErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "request_processing_errors_total",
		Help:           "Total number of errors encountered while processing ResourcePoolStatusRequests",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver_name"})

	// requestDuration times each processed request, from its sync's start.
	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "request_processing_duration_seconds",
		Help:           "Time taken to process a ResourcePoolStatusRequest",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver_name"})
)

var registerOnce sync.Once

// registerMetrics registers the families in the legacy registry kcm's /metrics serves, once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(requestsProcessed, requestErrors, requestDuration)
	})
}
