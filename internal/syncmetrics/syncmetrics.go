// Package syncmetrics is the pair of sync metrics upstream's certificate publishers
// (root-ca-cert-publisher, kube-apiserver-serving-clustertrustbundle-publisher) each
// declare: <subsystem>_sync_total and <subsystem>_sync_duration_seconds, one observation
// per sync labelled with the HTTP code of its outcome.
package syncmetrics

import (
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Syncs is one controller's pair.
type Syncs struct {
	total    *metrics.CounterVec
	duration *metrics.HistogramVec
	once     sync.Once
}

// New declares the pair of a subsystem with upstream's help texts for it (the publishers'
// differ, and the root CA publisher's histogram repeats its counter's).
func New(subsystem, totalHelp, durationHelp string) *Syncs {
	return &Syncs{
		total: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      subsystem,
			Name:           "sync_total",
			Help:           totalHelp,
			StabilityLevel: metrics.ALPHA,
		}, []string{"code"}),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:      subsystem,
			Name:           "sync_duration_seconds",
			Help:           durationHelp,
			Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
			StabilityLevel: metrics.ALPHA,
		}, []string{"code"}),
	}
}

// Register adds the pair to component-base's legacy registry (which kcm's /metrics serves)
// once per process, as upstream's constructor does.
func (s *Syncs) Register() {
	s.once.Do(func() {
		legacyregistry.MustRegister(s.total)
		legacyregistry.MustRegister(s.duration)
	})
}

// Record observes one sync that started at start and ended with err.
func (s *Syncs) Record(start time.Time, err error) {
	code := Code(err)
	s.duration.WithLabelValues(code).Observe(time.Since(start).Seconds())
	s.total.WithLabelValues(code).Inc()
}

// Code is 200 for a sync that succeeded, the API status code of its error, else 500.
func Code(err error) string {
	if err == nil {
		return "200"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "500"
}
