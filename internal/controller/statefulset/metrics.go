package statefulset

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's gauges (pkg/controller/statefulset/metrics), by set and pod management policy.
// Like upstream's, a set's series stay after the set is deleted. Its
// statefulset_controller_stale_sync_skips_total is staleGuard's (reconciler.go).
var (
	maxUnavailableGauge = metrics.NewGaugeVec(
		&metrics.GaugeOpts{
			Subsystem:      "statefulset_controller",
			Name:           "statefulset_max_unavailable",
			Help:           "Maximum number of unavailable pods allowed during StatefulSet rolling updates",
			StabilityLevel: metrics.ALPHA,
		}, []string{"statefulset_namespace", "statefulset_name", "pod_management_policy"},
	)
	unavailableReplicasGauge = metrics.NewGaugeVec(
		&metrics.GaugeOpts{
			Subsystem:      "statefulset_controller",
			Name:           "statefulset_unavailable_replicas",
			Help:           "Current number of unavailable pods in StatefulSet",
			StabilityLevel: metrics.ALPHA,
		}, []string{"statefulset_namespace", "statefulset_name", "pod_management_policy"},
	)
)

var registerOnce sync.Once

// registerMetrics registers the gauges in the legacy registry kcm's /metrics serves, once
// per process, as upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(maxUnavailableGauge)
		legacyregistry.MustRegister(unavailableReplicasGauge)
	})
}

// recordMaxUnavailable is what upstream reports with MaxUnavailableStatefulSet on each time
// it writes a set's status: the rolling update's budget (1 without a rollingUpdate).
func recordMaxUnavailable(set *appsv1.StatefulSet) {
	n := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		n = maxUnavailableOf(ru.MaxUnavailable, replicasOf(set))
	}
	maxUnavailableGauge.WithLabelValues(set.Namespace, set.Name, string(set.Spec.PodManagementPolicy)).Set(float64(n))
}

// recordUnavailable is what upstream reports when a sync reaches the rolling update with
// MaxUnavailableStatefulSet: how many of the ordinals in range are missing or unavailable.
func recordUnavailable(set *appsv1.StatefulSet, n int) {
	unavailableReplicasGauge.WithLabelValues(set.Namespace, set.Name, string(set.Spec.PodManagementPolicy)).Set(float64(n))
}
