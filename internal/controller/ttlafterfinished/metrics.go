package ttlafterfinished

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metric of ttl-after-finished-controller: how late, after its TTL expired, a Job
// was deleted.
var (
	jobDeletionDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "ttl_after_finished_controller",
		Name:           "job_deletion_duration_seconds",
		Help:           "The time it took to delete the job since it became eligible for deletion",
		StabilityLevel: metrics.ALPHA,
		// From 100ms to a last bucket of [~27m, +Inf).
		Buckets: metrics.ExponentialBuckets(0.1, 2, 14),
	})
	registerOnce sync.Once
)

// registerMetrics adds the family to the legacy registry once per process, as upstream's
// constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(jobDeletionDuration)
	})
}

// recordDeletion observes a Job deleted at now that expired at expiredAt.
func recordDeletion(now, expiredAt time.Time) {
	jobDeletionDuration.Observe(now.Sub(expiredAt).Seconds())
}
