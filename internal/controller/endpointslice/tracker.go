package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice the controller deleted.
const deletionExpected = -1

// sliceTracker remembers, per Service, the generation of every slice the controller wrote
// (or that it deleted one), as upstream's EndpointSliceTracker: events for its own writes
// are not a reason to sync, and a cache that has not caught up with them yet is detected
// before it makes the controller write twice.
type sliceTracker struct {
	mu          sync.Mutex
	generations map[types.NamespacedName]map[types.UID]int64
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{generations: map[types.NamespacedName]map[types.UID]int64{}}
}

func serviceOf(s *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
}

// has reports whether the slice is tracked.
func (t *sliceTracker) has(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.generations[serviceOf(s)][s.UID]
	return ok
}

// shouldSync reports whether the slice is newer than what the controller wrote (someone
// else changed it) or unknown.
func (t *sliceTracker) shouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.generations[serviceOf(s)][s.UID]
	return !ok || s.Generation > g
}

// stale reports whether the cached slices of a Service are older than the controller's own
// writes: a slice it wrote is missing or behind, or one it deleted is still there.
func (t *sliceTracker) stale(svc types.NamespacedName, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.generations[svc]
	if !ok {
		return false
	}
	seen := map[types.UID]bool{}
	for _, s := range cached {
		seen[s.UID] = true
		if g, ok := gens[s.UID]; ok && (g == deletionExpected || g > s.Generation) {
			return true
		}
	}
	for uid, g := range gens {
		if g != deletionExpected && !seen[uid] {
			return true
		}
	}
	return false
}

// wrote records a slice as the API server returned it.
func (t *sliceTracker) wrote(s *discoveryv1.EndpointSlice) { t.set(s, s.Generation) }

// deleting records that the controller deleted a slice.
func (t *sliceTracker) deleting(s *discoveryv1.EndpointSlice) { t.set(s, deletionExpected) }

func (t *sliceTracker) set(s *discoveryv1.EndpointSlice, g int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := serviceOf(s)
	if t.generations[key] == nil {
		t.generations[key] = map[types.UID]int64{}
	}
	t.generations[key][s.UID] = g
}

// deleted forgets a slice that is gone and reports whether the controller deleted it.
func (t *sliceTracker) deleted(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.generations[serviceOf(s)]
	if !ok {
		return true
	}
	g, ok := gens[s.UID]
	delete(gens, s.UID)
	return !ok || g == deletionExpected
}

func (t *sliceTracker) forget(svc types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.generations, svc)
}
