package podautoscaler

import (
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcm/kcm/internal/staleness"
)

// subsystem is upstream's prefix of the controller's families (pkg/controller/podautoscaler/monitor).
const subsystem = "horizontal_pod_autoscaler_controller"

// The action and error labels upstream's monitor records.
const (
	actionScaleUp   = "scale_up"
	actionScaleDown = "scale_down"
	actionNone      = "none"

	errorSpec     = "spec"
	errorInternal = "internal"
	errorNone     = "none"
)

// Upstream's families, with their names, help, labels, buckets and stability.
var (
	reconciliationsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "reconciliations_total",
		Help:           "Number of reconciliations of HPA controller. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. Note that if both spec and internal errors happen during a reconciliation, the first one to occur is reported in `error` label.",
		StabilityLevel: metrics.BETA,
	}, []string{"action", "error"})
	reconciliationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "reconciliation_duration_seconds",
		Help:           "The time(seconds) that the HPA controller takes to reconcile once. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. Note that if both spec and internal errors happen during a reconciliation, the first one to occur is reported in `error` label.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.BETA,
	}, []string{"action", "error"})
	metricComputationTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "metric_computation_total",
		Help:           "Number of metric computations. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. The label 'metric_type' corresponds to HPA.spec.metrics[*].type",
		StabilityLevel: metrics.BETA,
	}, []string{"action", "error", "metric_type"})
	metricComputationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "metric_computation_duration_seconds",
		Help:           "The time(seconds) that the HPA controller takes to calculate one metric. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. The label 'error' should be either 'spec', 'internal', or 'none'. The label 'metric_type' corresponds to HPA.spec.metrics[*].type",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.BETA,
	}, []string{"action", "error", "metric_type"})
	numHorizontalPodAutoscalers = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "num_horizontal_pod_autoscalers",
		Help:           "Current number of controlled HPA objects.",
		StabilityLevel: metrics.ALPHA,
	})
	desiredReplicasCount = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "desired_replicas",
		Help:           "Current desired replica count for HPA objects.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "hpa_name"})
)

// staleSkips is upstream's horizontal_pod_autoscaler_controller_stale_sync_skips_total,
// registered with the others whether or not StaleControllerConsistencyHPA is on, as upstream.
var staleSkips *metrics.CounterVec

var registerOnce sync.Once

// registerMetrics registers upstream's families once in the legacy registry kcm's /metrics
// serves, as upstream's monitor.Register.
func registerMetrics() {
	registerOnce.Do(func() {
		for _, m := range []metrics.Registerable{reconciliationsTotal, reconciliationDuration,
			metricComputationTotal, metricComputationDuration, numHorizontalPodAutoscalers, desiredReplicasCount} {
			legacyregistry.MustRegister(m)
		}
		staleSkips = staleness.SkipsMetric(subsystem, "HPA")
	})
}

// observeReconciliation records one reconciliation's outcome.
func observeReconciliation(action, errLabel string, d time.Duration) {
	reconciliationsTotal.WithLabelValues(action, errLabel).Inc()
	reconciliationDuration.WithLabelValues(action, errLabel).Observe(d.Seconds())
}

// observeMetricComputation records one metric's computation.
func observeMetricComputation(action, errLabel string, d time.Duration, t autoscalingv2.MetricSourceType) {
	metricComputationTotal.WithLabelValues(action, errLabel, string(t)).Inc()
	metricComputationDuration.WithLabelValues(action, errLabel, string(t)).Observe(d.Seconds())
}

// actionFor is the action label of a proposal against the HPA's last reported replicas.
func actionFor(proposed, current int32) string {
	switch {
	case proposed > current:
		return actionScaleUp
	case proposed < current:
		return actionScaleDown
	}
	return actionNone
}
