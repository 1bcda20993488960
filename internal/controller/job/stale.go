package job

import (
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kcm/kcm/internal/staleness"
)

// The resources whose cache a Job's sync must have seen its own writes in, as
// upstream's consistency store: the pods it created and its status.
var (
	podsResource = schema.GroupResource{Resource: "pods"}
	jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}
)

// staleRecheck is how soon a sync skipped for a stale cache runs again.
const staleRecheck = 100 * time.Millisecond

// jobSkips is upstream's job_controller_stale_sync_skips_total.
var jobSkips = sync.OnceValue(func() *metrics.CounterVec {
	return staleness.SkipsMetric("job_controller", "Job")
})

// NewStaleGuard is the StaleControllerConsistencyJob guard over the shared cache.
func NewStaleGuard(c cache.Cache) *staleness.Guard {
	return staleness.NewGuard(jobSkips(), map[schema.GroupResource]func() string{
		podsResource: staleness.StoreVersion(c, &corev1.Pod{}),
		jobsResource: staleness.StoreVersion(c, &batchv1.Job{}),
	})
}
