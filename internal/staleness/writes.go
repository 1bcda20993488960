// Package staleness is how kcm's controllers tell a cache that has not yet delivered their
// own last write from one that has, without ever waiting on it.
//
// A controller reads an object from the shared cache, writes it, and the cache delivers the
// write some time later. A sync that runs in between reads the version the write replaced:
// it would decide from state that is no longer in force (skip a write that is needed, because
// the stale copy already says what it would write; or act twice). Writes remembers, per
// object, the version the controller's last write replaced and what the API server stored,
// and gives the sync the stored copy while the cache still shows exactly the replaced version.
//
// Resource versions are compared for equality only, never ordered: they are opaque, and not
// comparable across an etcd restore, where a cache that relists may show a version "older"
// than one written before. Any cached version other than the replaced one is that write or
// later (a cache does not go back short of a relist), so the memory is dropped and the cache
// used: nothing waits for a version that may never come.
package staleness

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writes remembers the last write of each object of one kind.
type Writes[T client.Object] struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]write[T]
}

type write[T client.Object] struct {
	replaced string
	stored   T
}

// Wrote records a successful write: replaced is the resourceVersion the write was made
// from (the cached one; "" for a creation), stored the API server's answer.
func (w *Writes[T]) Wrote(replaced string, stored T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byKey == nil {
		w.byKey = map[types.NamespacedName]write[T]{}
	}
	w.byKey[client.ObjectKeyFromObject(stored)] = write[T]{replaced: replaced, stored: stored.DeepCopyObject().(T)}
}

// Forget drops what was remembered of the object: after a failed write (a conflict says
// someone else wrote since), or once the object is gone.
func (w *Writes[T]) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byKey, key)
}

// Current is the object to sync: a copy of the one stored by the last write while the cache
// still shows the version that write replaced, else cached.
func (w *Writes[T]) Current(cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(cached)
	last, ok := w.byKey[key]
	if !ok {
		return cached
	}
	switch Decide(cached.GetUID(), cached.GetResourceVersion(), last.stored.GetUID(), last.replaced) {
	case UseWritten:
		return last.stored.DeepCopyObject().(T)
	default:
		delete(w.byKey, key)
		return cached
	}
}

// Created is the object to sync when the cache has none of that name: a copy of the one the
// controller's last write created while the cache has not shown it yet, and true. A creation
// is forgotten once the cache shows the object (Current) or by Forget when it is deleted;
// the memory of an update is dropped here: the object is gone.
func (w *Writes[T]) Created(key types.NamespacedName) (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.byKey[key]
	if !ok || last.replaced != "" {
		delete(w.byKey, key)
		var none T
		return none, false
	}
	return last.stored.DeepCopyObject().(T), true
}

// Decision is what a sync makes of a cached object given the controller's last write.
type Decision int

const (
	// UseCached: the cache shows the last write or a later version (or another object of
	// the same name); the memory of the write is no longer needed.
	UseCached Decision = iota
	// UseWritten: the cache still shows the version the last write replaced.
	UseWritten
)

// Decide compares a cached object with the last write: its uid and the version it
// replaced. Versions are compared for equality only.
func Decide(cachedUID types.UID, cachedRV string, writtenUID types.UID, replaced string) Decision {
	if cachedUID == writtenUID && cachedRV == replaced {
		return UseWritten
	}
	return UseCached
}
