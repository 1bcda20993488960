package ctbpublisher

import (
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metrics of the publisher, labelled with the HTTP code of the sync's outcome.
var (
	syncTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "clustertrustbundle_publisher",
		Name:           "sync_total",
		Help:           "Number of syncs that occurred in cluster trust bundle publisher.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	syncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "clustertrustbundle_publisher",
		Name:           "sync_duration_seconds",
		Help:           "The time it took to sync a cluster trust bundle.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(syncTotal)
		legacyregistry.MustRegister(syncDuration)
	})
}

// syncCode is 200 for a sync that succeeded, the API status code of its error, else 500.
func syncCode(err error) string {
	if err == nil {
		return "200"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "500"
}

func recordSync(start time.Time, err error) {
	code := syncCode(err)
	syncDuration.WithLabelValues(code).Observe(time.Since(start).Seconds())
	syncTotal.WithLabelValues(code).Inc()
}
