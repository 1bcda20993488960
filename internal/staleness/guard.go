package staleness

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/track"
)

// Guard is upstream's stale-controller consistency store (the StaleControllerConsistency*
// gates): a controller records, per owner, the resourceVersion of each write it makes for
// it (the owner's status, the pods it creates), and a sync of the owner is skipped while
// the cache of a written resource has not yet synced up to that version, counted in the
// controller's <subsystem>_stale_sync_skips_total{group,resource}.
//
// Unlike upstream's, it cannot wedge. Upstream compares the versions as numbers and waits for
// as long as the cache stays behind; after an API server restart in the middle of a rollout
// its ReplicaSet syncs kept failing "read version ... is not as new as written version" for
// minutes. Here a write stops holding syncs back when the cache's version went back since the
// write (a relist after an etcd restore: versions are not comparable across it), when the
// versions do not compare, or MaxWait after the write: the cache lag the guard is for is a
// matter of milliseconds, and past that the sync runs as it would without the guard.
type Guard struct {
	// Skips counts skipped syncs by the group and resource whose cache was behind.
	Skips *metrics.CounterVec
	// MaxWait bounds how long one write holds the owner's syncs back.
	MaxWait time.Duration
	Clock   clock.PassiveClock

	stores map[schema.GroupResource]func() string
	mu     sync.Mutex
	owners map[types.NamespacedName]*ownerWrites
}

// DefaultMaxWait is the Guard's MaxWait.
const DefaultMaxWait = 2 * time.Second

type ownerWrites struct {
	uid    types.UID
	writes map[schema.GroupResource]Write
}

// Write is one recorded write: its resourceVersion, the cache's version when it was made,
// and when.
type Write struct {
	RV   string
	Base string
	At   time.Time
}

// NewGuard returns a Guard reading the synced version of each resource's cache.
func NewGuard(skips *metrics.CounterVec, stores map[schema.GroupResource]func() string) *Guard {
	return &Guard{Skips: skips, MaxWait: DefaultMaxWait, Clock: clock.RealClock{}, stores: stores, owners: map[types.NamespacedName]*ownerWrites{}}
}

// WroteAt records a write for the owner; a nil Guard (the gate off) records nothing.
func (g *Guard) WroteAt(owner types.NamespacedName, uid types.UID, gr schema.GroupResource, rv string) {
	if g == nil || rv == "" {
		return
	}
	base := ""
	if read := g.stores[gr]; read != nil {
		base = read()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.owners[owner]
	if o == nil || o.uid != uid {
		o = &ownerWrites{uid: uid, writes: map[schema.GroupResource]Write{}}
		g.owners[owner] = o
	}
	if cur, ok := o.writes[gr]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(cur.RV, rv); err == nil && cmp >= 0 {
			return
		}
	}
	o.writes[gr] = Write{RV: rv, Base: base, At: g.Clock.Now()}
}

// Clear forgets the owner's writes (it is gone).
func (g *Guard) Clear(owner types.NamespacedName) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.owners, owner)
}

// Skip is Stale as a Reconcile's first step: whether to skip the owner's sync, and the result
// that runs it again once the write stops holding it back, at most Recheck later (the
// cache's own events may concern other owners' objects, so the owner does not wait for one).
func (g *Guard) Skip(ctx context.Context, owner types.NamespacedName) (reconcile.Result, bool) {
	stale, wait := g.Stale(owner)
	if !stale {
		return reconcile.Result{}, false
	}
	log.FromContext(ctx).V(4).Info("Skipping sync: the cache has not caught up with our last write")
	return reconcile.Result{RequeueAfter: max(min(wait, Recheck), time.Millisecond)}, true
}

// Stale reports whether the owner's sync must be skipped because a cache it reads has not
// caught up with the controller's own write, and how long until the write stops holding it
// back; each skip is counted. Writes that no longer hold syncs back are forgotten.
func (g *Guard) Stale(owner types.NamespacedName) (bool, time.Duration) {
	if g == nil {
		return false, 0
	}
	gr, w, _, now, found := g.behind(owner)
	if !found {
		g.Clear(owner)
		return false, 0
	}
	if g.Skips != nil {
		g.Skips.WithLabelValues(gr.Group, gr.Resource).Inc()
	}
	return true, w.At.Add(g.MaxWait).Sub(now)
}

// behind finds the first of the owner's writes whose resource's cache has not caught up
// with it, with the version that cache shows and the time it was judged at. The writes are
// read in a fixed order, so that a skip is counted against the same resource every time
// both are behind (map order would pick one at random).
func (g *Guard) behind(owner types.NamespacedName) (gr schema.GroupResource, w Write, read string, now time.Time, found bool) {
	g.mu.Lock()
	var writes map[schema.GroupResource]Write
	if o := g.owners[owner]; o != nil {
		writes = maps.Clone(o.writes)
	}
	g.mu.Unlock()
	now = g.Clock.Now()
	order := slices.SortedFunc(maps.Keys(writes), func(a, b schema.GroupResource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	for _, gr := range order {
		w := writes[gr]
		read := ""
		if f := g.stores[gr]; f != nil {
			read = f()
		}
		if DecideWrite(w, read, now, g.MaxWait) == Behind {
			return gr, w, read, now, true
		}
	}
	return schema.GroupResource{}, Write{}, "", now, false
}

// Verdict is what a write says of a sync.
type Verdict int

const (
	// Caught: the cache shows the write, or the write no longer holds syncs back.
	Caught Verdict = iota
	// Behind: the cache has not synced up to the write yet; skip the sync.
	Behind
)

// DecideWrite compares a write with the version its resource's cache has synced to (read).
func DecideWrite(w Write, read string, now time.Time, maxWait time.Duration) Verdict {
	if read == "" || w.RV == "" {
		// The cache does not say (client-go's AtomicFIFO off): nothing to compare.
		return Caught
	}
	cmp, err := resourceversion.CompareResourceVersion(w.RV, read)
	if err != nil || cmp <= 0 {
		return Caught
	}
	if w.Base != "" {
		if back, err := resourceversion.CompareResourceVersion(read, w.Base); err != nil || back < 0 {
			// The cache went back since the write: it relisted from a restored etcd.
			return Caught
		}
	}
	if now.Sub(w.At) >= maxWait {
		return Caught
	}
	return Behind
}

// StoreVersion reads the version the shared cache's informer of obj's kind has synced to,
// as upstream reads its informer store's LastStoreSyncResourceVersion. The informer is looked
// up at the first read, once the controller's watches exist.
func StoreVersion(c cache.Cache, obj client.Object) func() string {
	var (
		mu    sync.Mutex
		store toolscache.Store
	)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		if store == nil {
			inf, err := c.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return ""
			}
			s, ok := inf.(interface{ GetStore() toolscache.Store })
			if !ok {
				return ""
			}
			store = s.GetStore()
		}
		return store.LastStoreSyncResourceVersion()
	}
}

// SkipsMetric is a controller's <subsystem>_stale_sync_skips_total, upstream's counter of
// syncs skipped for a stale cache, registered once in component-base's legacy registry (which
// kcm's /metrics serves), as upstream registers it.
func SkipsMetric(subsystem, kind string) *metrics.CounterVec {
	c := metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "stale_sync_skips_total",
		Help:           "Total number of " + kind + " syncs skipped due to a stale watch cache.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"group", "resource"})
	legacyregistry.MustRegister(c)
	return c
}

// Skipped is <subsystem>_stale_sync_skips_total for a resource, as kcm's /metrics shows it
// (the legacy registry).
func Skipped(subsystem, resource string) (float64, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range families {
		if mf.GetName() != subsystem+"_stale_sync_skips_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" && l.GetValue() == resource {
					return m.GetCounter().GetValue(), nil
				}
			}
		}
	}
	return 0, nil
}

// View is the stale-cache wait the Guard holds the owner with key ("namespace/name") in, for
// its per-object view (track.Controller.StaleFrom): the first resource whose cache is behind
// the controller's write, as Stale decides (without counting a skip); nil when none is, or
// for a nil Guard.
func (g *Guard) View(key string) *track.Stale {
	if g == nil {
		return nil
	}
	gr, w, read, _, found := g.behind(track.ParseKey(key))
	if !found {
		return nil
	}
	return &track.Stale{Resource: gr.String(), Written: w.RV, Seen: read, Since: w.At}
}
