package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
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
