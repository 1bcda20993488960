package endpoints

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

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
