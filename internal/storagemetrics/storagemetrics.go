// Package storagemetrics holds the storage operation families upstream's volume code
// registers in one place (pkg/volume/util/metrics.go) for every controller that runs volume
// operations: storage_operation_duration_seconds, volume_operation_total_seconds and
// csi_operations_seconds. They are registered once, by the first controller that records
// one, so that several controllers may share them (a second registration would panic).
package storagemetrics

import (
	"strconv"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Status label values of storage_operation_duration_seconds.
const (
	StatusSuccess     = "success"
	StatusFailUnknown = "fail-unknown"
)

// buckets are upstream's, in seconds, for all three families.
var buckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}

var (
	// operationDuration is one attempt of an operation (attach, detach, expand_volume, ...).
	operationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "storage_operation_duration_seconds",
		Help:           "Storage operation duration",
		Buckets:        buckets,
		StabilityLevel: metrics.BETA,
	}, []string{"volume_plugin", "operation_name", "status", "migrated"})

	// endToEnd is an operation from its first attempt to its end (the persistent volume
	// binder's provision-and-bind and delete).
	endToEnd = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "volume_operation_total_seconds",
		Help:           "Storage operation end to end duration in seconds",
		Buckets:        buckets,
		StabilityLevel: metrics.BETA,
	}, []string{"plugin_name", "operation_name"})

	// csiOperations is one call to a CSI driver, by gRPC status code.
	csiOperations = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "csi",
		Name:           "operations_seconds",
		Help:           "Container Storage Interface operation duration with gRPC error code status total",
		Buckets:        buckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver_name", "method_name", "grpc_status_code", "migrated"})
)

var registerOnce sync.Once

// Register registers the three families in the legacy registry kcm's /metrics serves,
// once; every Record function calls it, as upstream's do.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(operationDuration, endToEnd, csiOperations)
	})
}

// RecordOperation observes one attempt of an operation on a volume of the plugin (upstream's
// full plugin name, e.g. "kubernetes.io/csi:<driver>"): status fail-unknown when it failed.
func RecordOperation(plugin, operation string, seconds float64, failed, migrated bool) {
	Register()
	status := StatusSuccess
	if failed {
		status = StatusFailUnknown
	}
	operationDuration.WithLabelValues(plugin, operation, status, strconv.FormatBool(migrated)).Observe(seconds)
}

// RecordEndToEnd observes an operation's whole duration, from its first attempt.
func RecordEndToEnd(plugin, operation string, seconds float64) {
	Register()
	endToEnd.WithLabelValues(plugin, operation).Observe(seconds)
}

// RecordCSIOperation observes one call to a CSI driver, with its gRPC status code
// ("OK", "DeadlineExceeded", ..., "unknown-non-grpc").
func RecordCSIOperation(driver, method, code string, seconds float64, migrated bool) {
	Register()
	csiOperations.WithLabelValues(driver, method, code, strconv.FormatBool(migrated)).Observe(seconds)
}
