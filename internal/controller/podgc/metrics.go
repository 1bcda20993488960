package podgc

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metric families (pkg/controller/podgc/metrics): every force deletion podgc
// attempts, and the attempts that failed, by the pod's namespace and the reason it was
// collected ("terminated", "out-of-service", "orphaned", "unscheduled").
var (
	forceDeletes = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      "pod_gc_collector",
			Name:           "force_delete_pods_total",
			Help:           "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"namespace", "reason"},
	)
	forceDeleteErrors = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      "pod_gc_collector",
			Name:           "force_delete_pod_errors_total",
			Help:           "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"namespace", "reason"},
	)
)

var registerOnce sync.Once

// registerMetrics registers the families in the legacy registry kcm's /metrics serves, once
// per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(forceDeletes)
		legacyregistry.MustRegister(forceDeleteErrors)
	})
}

// recordForceDelete counts one force deletion attempt. As upstream, every attempt counts,
// and any error counts as a failure, a pod already gone included.
func recordForceDelete(namespace, reason string, err error) {
	forceDeletes.WithLabelValues(namespace, reason).Inc()
	if err != nil {
		forceDeleteErrors.WithLabelValues(namespace, reason).Inc()
	}
}
