package cronjob

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metric of cronjob-controller: how long after its schedule time a run's Job was
// created.
var (
	jobCreationSkew = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "cronjob_controller",
		Name:           "job_creation_skew_duration_seconds",
		Help:           "Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
		StabilityLevel: metrics.STABLE,
		Buckets:        metrics.ExponentialBuckets(1, 2, 10),
	})
	registerOnce sync.Once
)

// registerMetrics adds the family to the legacy registry once per process, as upstream's
// constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(jobCreationSkew)
	})
}

// recordCreation observes a Job created (by the API server's clock) for a run scheduled at
// scheduled.
func recordCreation(created, scheduled time.Time) {
	jobCreationSkew.Observe(created.Sub(scheduled).Seconds())
}
