package endpointslice

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/pod"
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

// triggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time of a sync as
// upstream's TriggerTimeTracker: the earliest Ready transition (or Service creation) newer
// than what the previous sync of the Service saw; the Service's creation on its first sync;
// zero when nothing changed (the annotation is then cleared on the slices written).
type triggerTimes struct {
	mu       sync.Mutex
	services map[types.NamespacedName]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

func newTriggerTimes() *triggerTimes {
	return &triggerTimes{services: map[types.NamespacedName]triggerState{}}
}

func (t *triggerTimes) compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	state, known := t.services[key]
	t.mu.Unlock()

	var earliest time.Time
	podTimes := map[string]time.Time{}
	for _, p := range pods {
		c := pod.ReadyCondition(p)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		at := c.LastTransitionTime.Time
		podTimes[p.Name] = at
		if at.After(state.pods[p.Name]) {
			earliest = earlier(earliest, at)
		}
	}
	created := svc.CreationTimestamp.Time
	if created.After(state.service) {
		earliest = earlier(earliest, created)
	}

	t.mu.Lock()
	t.services[key] = triggerState{service: created, pods: podTimes}
	t.mu.Unlock()
	if !known {
		return created
	}
	return earliest
}

func earlier(current, candidate time.Time) time.Time {
	if current.IsZero() || candidate.Before(current) {
		return candidate
	}
	return current
}

func (t *triggerTimes) forget(svc types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.services, svc)
}
