package cloudnodelifecycle

import (
	"context"
	"errors"
	"sync"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's families (k8s.io/cloud-provider/controllers/nodelifecycle/metrics.go): the
// duration of each pass over the nodes, and every provider call by operation and result.
var (
	monitorNodesDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "cloud_node_lifecycle_controller",
		Name:           "monitor_nodes_duration_seconds",
		Help:           "A metric measuring the duration in seconds of a single MonitorNodes loop execution.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	cloudProviderCalls = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "cloud_node_lifecycle_controller",
		Name:           "cloud_provider_calls_total",
		Help:           "The total number of cloud provider API calls, labeled by operation and result.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation", "result"})
)

// The operation label of cloud_provider_calls_total.
const (
	opInstanceExists   = "instance_exists"
	opInstanceShutdown = "instance_shutdown"
	opInstanceMetadata = "instance_metadata"
)

var registerOnce sync.Once

// registerMetrics registers the families in the legacy registry kcm's /metrics serves, once
// per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(monitorNodesDuration)
		legacyregistry.MustRegister(cloudProviderCalls)
	})
}

// callResult is the result label of a provider call that returned err.
func callResult(err error) string {
	switch {
	case errors.Is(err, cloudprovider.NotImplemented):
		return "not_implemented"
	case errors.Is(err, cloudprovider.InstanceNotFound):
		return "instance_not_found"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case err != nil:
		return "error"
	}
	return "success"
}

// observeCall counts one provider call.
func observeCall(operation string, err error) {
	cloudProviderCalls.WithLabelValues(operation, callResult(err)).Inc()
}
