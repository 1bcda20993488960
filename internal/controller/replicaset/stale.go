package replicaset

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

// The resources whose cache a ReplicaSet's sync must have seen its own writes in, as
// upstream's consistency store: the pods it created and its status.
var (
	podsResource        = schema.GroupResource{Resource: "pods"}
	replicaSetsResource = schema.GroupResource{Group: "apps", Resource: "replicasets"}
)

// staleRecheck is how soon a sync skipped for a stale cache runs again (the cache's own
// events may concern other owners' objects).
const staleRecheck = 100 * time.Millisecond

// replicaSetSkips is upstream's replicaset_controller_stale_sync_skips_total.
var replicaSetSkips = sync.OnceValue(func() *metrics.CounterVec {
	return staleness.SkipsMetric("replicaset_controller", "ReplicaSet")
})

// NewStaleGuard is the StaleControllerConsistencyReplicaSet guard over the shared cache.
// Upstream has none for ReplicationControllers.
func NewStaleGuard(c cache.Cache) *staleness.Guard {
	return staleness.NewGuard(replicaSetSkips(), map[schema.GroupResource]func() string{
		podsResource:        staleness.StoreVersion(c, &corev1.Pod{}),
		replicaSetsResource: staleness.StoreVersion(c, &appsv1.ReplicaSet{}),
	})
}
