package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/sets"
)

// finalizerExpectations remembers, per Job, the pods whose tracking finalizer this
// controller removed but whose update the cache has not shown yet: until it does, such a
// pod still looks unfinished business, and must not be counted a second time.
type finalizerExpectations struct {
	mu    sync.Mutex
	byJob map[types.NamespacedName]sets.Set[types.UID]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{byJob: map[types.NamespacedName]sets.Set[types.UID]{}}
}

func (e *finalizerExpectations) expect(job types.NamespacedName, uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.byJob[job]
	if !ok {
		s = sets.New[types.UID]()
		e.byJob[job] = s
	}
	s.Insert(uids...)
}

// observed records that the cache shows the pod without the finalizer (or gone).
func (e *finalizerExpectations) observed(job types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.byJob[job]; ok {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(e.byJob, job)
		}
	}
}

// expected returns a copy of the pods still expected to lose their finalizer.
func (e *finalizerExpectations) expected(job types.NamespacedName) sets.Set[types.UID] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byJob[job].Clone()
}

func (e *finalizerExpectations) forget(job types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byJob, job)
}

// writtenVersions remembers the resourceVersion of each Job's last status write. A Job
// read from the cache at an older version does not show that write yet; syncing it would
// count from stale counters, so the sync waits for the cache to catch up (the update event
// that follows queues the Job again). This is what upstream's consistency store
// (StaleControllerConsistencyJob, on by default) and finishedJobExpectations do.
type writtenVersions struct {
	mu    sync.Mutex
	byJob map[types.NamespacedName]written
}

type written struct {
	uid             types.UID
	resourceVersion string
}

func newWrittenVersions() *writtenVersions {
	return &writtenVersions{byJob: map[types.NamespacedName]written{}}
}

func (w *writtenVersions) wrote(job types.NamespacedName, uid types.UID, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byJob[job] = written{uid: uid, resourceVersion: rv}
}

// stale reports whether a cached Job at resourceVersion rv predates our last write to it.
func (w *writtenVersions) stale(job types.NamespacedName, uid types.UID, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.byJob[job]
	if !ok || last.uid != uid {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, last.resourceVersion)
	if err != nil {
		return false
	}
	if cmp >= 0 {
		// Caught up: nothing left to wait for.
		delete(w.byJob, job)
		return false
	}
	return true
}

func (w *writtenVersions) forget(job types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byJob, job)
}
