package daemonset

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kcm/kcm/internal/staleness"
)

// The resources whose cache a DaemonSet's sync must have seen its own writes in, as
// upstream's consistency store: the pods it created and its status.
var (
	podsResource       = schema.GroupResource{Resource: "pods"}
	daemonSetsResource = schema.GroupResource{Group: "apps", Resource: "daemonsets"}
)

// staleRecheck is how soon a sync skipped for a stale cache runs again.
const staleRecheck = 100 * time.Millisecond

// daemonSetSkips is upstream's daemonset_controller_stale_sync_skips_total.
var daemonSetSkips = sync.OnceValue(func() *metrics.CounterVec {
	return staleness.SkipsMetric("daemonset_controller", "DaemonSet")
})

// NewStaleGuard is the StaleControllerConsistencyDaemonSet guard over the shared cache.
func NewStaleGuard(c cache.Cache) *staleness.Guard {
	return staleness.NewGuard(daemonSetSkips(), map[schema.GroupResource]func() string{
		podsResource:       staleness.StoreVersion(c, &corev1.Pod{}),
		daemonSetsResource: staleness.StoreVersion(c, &appsv1.DaemonSet{}),
	})
}
