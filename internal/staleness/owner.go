package staleness

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recheck is how soon a sync skipped for a stale cache runs again: the cache's own events
// may concern other owners' objects, so the owner does not wait for one.
const Recheck = 100 * time.Millisecond

// Pods is the resource every workload controller's guard watches: the pods it creates.
var Pods = schema.GroupResource{Resource: "pods"}

// Watched is a resource whose cache an owner's sync must have seen the controller's own
// writes in, and an object of its kind (to find its informer in the shared cache).
type Watched struct {
	Resource schema.GroupResource
	Object   client.Object
}

// Owner declares one controller's guard, upstream's StaleControllerConsistency<Kind>
// store: the resources it records its writes to, and its
// <subsystem>_stale_sync_skips_total, registered once at first use.
type Owner struct {
	watched []Watched
	skips   func() *metrics.CounterVec
}

// ForOwner declares the guard of a controller: subsystem and kind name its skips metric
// ("replicaset_controller", "ReplicaSet"), watched are the resources it writes.
func ForOwner(subsystem, kind string, watched ...Watched) *Owner {
	return &Owner{
		watched: watched,
		skips:   sync.OnceValue(func() *metrics.CounterVec { return SkipsMetric(subsystem, kind) }),
	}
}

// Skips is the owner's <subsystem>_stale_sync_skips_total.
func (o *Owner) Skips() *metrics.CounterVec { return o.skips() }

// Guard is the owner's guard over the shared cache.
func (o *Owner) Guard(c cache.Cache) *Guard {
	return o.guard(func(obj client.Object) func() string { return StoreVersion(c, obj) })
}

// guard builds the Guard reading each watched resource's version with version.
func (o *Owner) guard(version func(client.Object) func() string) *Guard {
	stores := make(map[schema.GroupResource]func() string, len(o.watched))
	for _, w := range o.watched {
		stores[w.Resource] = version(w.Object)
	}
	return NewGuard(o.Skips(), stores)
}
