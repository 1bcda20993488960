package rootcapublisher

import (
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metrics of the publisher: one observation per namespace sync, labelled with the
// HTTP code of its outcome. The duplicated help text of the histogram is upstream's.
var (
	syncTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "root_ca_cert_publisher",
		Name:           "sync_total",
		Help:           "Number of namespace syncs happened in root ca cert publisher.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	syncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "root_ca_cert_publisher",
		Name:           "sync_duration_seconds",
		Help:           "Number of namespace syncs happened in root ca cert publisher.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	registerOnce sync.Once
)

// registerMetrics registers the families once per process, as upstream's constructor does.
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
