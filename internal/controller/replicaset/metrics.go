package replicaset

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcm/kcm/internal/pod"
)

// sortingDeletionAgeRatio is upstream's replicaset_controller_sorting_deletion_age_ratio,
// which upstream's ReplicaSet and ReplicationController controllers both observe (they are
// the same code there, as here). Its replicaset_controller_stale_sync_skips_total is
// staleGuard's (reconciler.go).
var sortingDeletionAgeRatio = metrics.NewHistogram(
	&metrics.HistogramOpts{
		Subsystem: "replicaset_controller",
		Name:      "sorting_deletion_age_ratio",
		Help: "The ratio of chosen deleted pod's ages to the current youngest pod's age (at the time). Should be <2. " +
			"The intent of this metric is to measure the rough efficacy of the sorting (and deletion) of pods when " +
			"a replicaset scales down. This only considers Ready pods when calculating and reporting.",
		Buckets:        metrics.ExponentialBuckets(0.25, 2, 6),
		StabilityLevel: metrics.ALPHA,
	},
)

var registerOnce sync.Once

// registerMetrics registers the histogram in the legacy registry kcm's /metrics serves, once
// per process (both controllers call it, as upstream's constructor).
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(sortingDeletionAgeRatio) })
}

// deletionAgeRatios are what upstream observes when a scale-down had to choose among the
// pods (it deletes fewer than all): for each ready pod chosen, its age over the age of the
// youngest ready pod. Ages are whole milliseconds and, as upstream, the ratio is their
// integer quotient. No ready pod younger than now is left out: upstream would divide by
// zero.
func deletionAgeRatios(pods, victims []*corev1.Pod, now time.Time) []float64 {
	var youngest time.Time
	for _, p := range pods {
		if pod.IsReady(p) && p.CreationTimestamp.After(youngest) {
			youngest = p.CreationTimestamp.Time
		}
	}
	youngestAge := now.Sub(youngest).Milliseconds()
	if youngestAge <= 0 {
		return nil
	}
	var out []float64
	for _, p := range victims {
		if pod.IsReady(p) {
			out = append(out, float64(now.Sub(p.CreationTimestamp.Time).Milliseconds()/youngestAge))
		}
	}
	return out
}
