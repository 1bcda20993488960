package endpoints

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/pod"
)

// triggerTimes computes the last-change-trigger-time annotation as upstream's
// TriggerTimeTracker: the earliest of the changes (pod readiness transitions, the Service's
// creation) seen since the previous sync of the Service, or the Service's creation time on
// its first sync. A zero time means no change to report.
type triggerTimes struct {
	mu     sync.Mutex
	states map[types.NamespacedName]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

// observe records the Service's and its pods' trigger times and returns the time to report.
func (t *triggerTimes) observe(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[types.NamespacedName]triggerState{}
	}
	prev, known := t.states[key]
	var earliest time.Time
	note := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: map[string]time.Time{}}
	for _, p := range pods {
		c := pod.ReadyCondition(p)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		at := c.LastTransitionTime.Time
		next.pods[p.Name] = at
		if at.After(prev.pods[p.Name]) {
			note(at)
		}
	}
	if next.service.After(prev.service) {
		note(next.service)
	}
	t.states[key] = next
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

func (t *triggerTimes) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, key)
}

// staleTracker remembers, per Endpoints, the resourceVersion this controller replaced (or
// that it created one), so that a sync reading the cache before it caught up with the
// write waits instead of writing again from an outdated object. A memory older than
// staleTimeout is dropped, so that a lost watch event cannot hold a Service forever.
type staleTracker struct {
	mu sync.Mutex
	rv map[types.NamespacedName]written
}

type written struct {
	// rv is the replaced resourceVersion, or created for an Endpoints not seen yet.
	rv string
	at time.Time
}

const (
	created      = "<created>"
	staleTimeout = 30 * time.Second
)

func (s *staleTracker) wrote(key types.NamespacedName, replacedRV string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == nil {
		s.rv = map[types.NamespacedName]written{}
	}
	s.rv[key] = written{rv: replacedRV, at: time.Now()}
}

// isStale reports whether the cached Endpoints (nil when absent) predates a write of ours.
func (s *staleTracker) isStale(key types.NamespacedName, cached *corev1.Endpoints) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.rv[key]
	switch {
	case !ok:
		return false
	case time.Since(w.at) > staleTimeout:
	case cached == nil && w.rv == created:
		return true
	case cached != nil && cached.ResourceVersion == w.rv:
		return true
	}
	delete(s.rv, key)
	return false
}

func (s *staleTracker) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rv, key)
}
