package tainteviction

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// eviction is a decided deletion of one pod, kept until the pod is deleted or the decision is
// cancelled: upstream's timed worker.
type eviction struct {
	// uid is the pod's: a new pod of the same name starts afresh.
	uid types.UID
	// fireAt is when the pod is to be deleted.
	fireAt time.Time
	// timed is true for an eviction scheduled for later; as upstream, only cancelling such an
	// eviction is announced with an Event.
	timed bool
	// announced is true once the "Marking for deletion" Event went out, so that retries of a
	// failed deletion do not repeat it.
	announced bool
}

// pendingEvictions are the evictions decided and not yet done, by pod. Reconciles of
// different pods run concurrently.
type pendingEvictions struct {
	mu    sync.Mutex
	byPod map[types.NamespacedName]eviction
}

func newPendingEvictions() *pendingEvictions {
	return &pendingEvictions{byPod: map[types.NamespacedName]eviction{}}
}

func (p *pendingEvictions) get(key types.NamespacedName) (eviction, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.byPod[key]
	return e, ok
}

func (p *pendingEvictions) set(key types.NamespacedName, e eviction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byPod[key] = e
}

func (p *pendingEvictions) remove(key types.NamespacedName) (eviction, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.byPod[key]
	delete(p.byPod, key)
	return e, ok
}

func (p *pendingEvictions) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byPod)
}
