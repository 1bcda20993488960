package statefulset

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kcm/kcm/internal/staleness"
)

// The resources whose cache a StatefulSet's sync must have seen its own writes in, as
// upstream's consistency store: the pods it created or updated, the claims it created or
// updated, and its status.
var (
	podsResource         = schema.GroupResource{Resource: "pods"}
	claimsResource       = schema.GroupResource{Resource: "persistentvolumeclaims"}
	statefulSetsResource = schema.GroupResource{Group: "apps", Resource: "statefulsets"}
)

// staleRecheck is how soon a sync skipped for a stale cache runs again.
const staleRecheck = 100 * time.Millisecond

// wrote records a write for the set, when the guard is on.
func (r *Reconciler) wrote(set *appsv1.StatefulSet, gr schema.GroupResource, rv string) {
	r.Stale.WroteAt(types.NamespacedName{Namespace: set.Namespace, Name: set.Name}, set.UID, gr, rv)
}

// statefulSetSkips is upstream's statefulset_controller_stale_sync_skips_total.
var statefulSetSkips = sync.OnceValue(func() *metrics.CounterVec {
	return staleness.SkipsMetric("statefulset_controller", "StatefulSet")
})

// NewStaleGuard is the StaleControllerConsistencyStatefulSet guard over the shared cache.
func NewStaleGuard(c cache.Cache) *staleness.Guard {
	return staleness.NewGuard(statefulSetSkips(), map[schema.GroupResource]func() string{
		podsResource:         staleness.StoreVersion(c, &corev1.Pod{}),
		claimsResource:       staleness.StoreVersion(c, &corev1.PersistentVolumeClaim{}),
		statefulSetsResource: staleness.StoreVersion(c, &appsv1.StatefulSet{}),
	})
}
