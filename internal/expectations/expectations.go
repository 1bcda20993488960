// Package expectations remembers the creations and deletions a controller asked for until it
// sees them in its cache, so that a sync running before the cache caught up does not create
// or delete the same pods twice. It is upstream's ControllerExpectations, keyed by owner.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kcm/kcm/internal/track"
)

// Timeout is how long expectations are trusted: past it, a lost watch event no longer
// blocks the owner forever.
const Timeout = 5 * time.Minute

type record struct {
	adds      int
	deletions map[string]bool
	since     time.Time
}

// Expectations tracks pending creations and deletions per owner. The zero value is not
// usable; call New.
type Expectations struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	byKey map[types.NamespacedName]*record
}

// New returns empty Expectations reading time from clk (nil means the real clock).
func New(clk clock.PassiveClock) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Expectations{clock: clk, byKey: map[types.NamespacedName]*record{}}
}

// Satisfied reports whether owner has no pending expectations (or they timed out), i.e.
// whether its cache view can be trusted to act on.
func (e *Expectations) Satisfied(owner types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.byKey[owner]
	if !ok {
		return true
	}
	if (r.adds <= 0 && len(r.deletions) == 0) || e.clock.Since(r.since) > Timeout {
		return true
	}
	return false
}

// ExpectCreations records that owner is about to create n objects.
func (e *Expectations) ExpectCreations(owner types.NamespacedName, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[owner] = &record{adds: n, deletions: map[string]bool{}, since: e.clock.Now()}
}

// ExpectDeletions records that owner is about to delete the objects with these keys
// ("namespace/name").
func (e *Expectations) ExpectDeletions(owner types.NamespacedName, keys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &record{deletions: map[string]bool{}, since: e.clock.Now()}
	for _, k := range keys {
		r.deletions[k] = true
	}
	e.byKey[owner] = r
}

// CreationObserved records one creation seen (or one that will never happen).
func (e *Expectations) CreationObserved(owner types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.byKey[owner]; ok && r.adds > 0 {
		r.adds--
	}
}

// DeletionObserved records the deletion of key seen (or one that will never happen).
func (e *Expectations) DeletionObserved(owner types.NamespacedName, key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.byKey[owner]; ok {
		delete(r.deletions, key)
	}
}

// Forget drops owner's expectations, e.g. when the owner is gone.
func (e *Expectations) Forget(owner types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, owner)
}

// Pending is what owner still waits to observe: creations, deletions, and since when; ok is
// false when nothing holds its syncs back (none pending, or they timed out).
func (e *Expectations) Pending(owner types.NamespacedName) (creations, deletions int, since time.Time, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, found := e.byKey[owner]
	if !found || (r.adds <= 0 && len(r.deletions) == 0) || e.clock.Since(r.since) > Timeout {
		return 0, 0, time.Time{}, false
	}
	return max(r.adds, 0), len(r.deletions), r.since, true
}

// Views reads the pending expectations of a key ("namespace/name") in es for the owner's
// per-object view (track.Controller.ExpectationsFrom): their sum, since the oldest; nil when
// none is pending. A controller keeping creations and deletions apart passes both.
func Views(es ...*Expectations) func(key string) *track.Expectations {
	return func(key string) *track.Expectations {
		owner := track.ParseKey(key)
		var v *track.Expectations
		for _, e := range es {
			c, d, since, ok := e.Pending(owner)
			if !ok {
				continue
			}
			if v == nil {
				v = &track.Expectations{Since: since}
			}
			v.Creations += c
			v.Deletions += d
			if since.Before(v.Since) {
				v.Since = since
			}
		}
		return v
	}
}
