package resourcequota

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recountMode is what a recount may do to the recorded usage.
type recountMode int

const (
	// fullRecount replaces the recorded usage by the count: the quota is new or its spec
	// changed, a charged object went away or changed its charge, or the sync period passed.
	fullRecount recountMode = iota
	// raiseOnly only raises the recorded usage: an object appeared in the cache. Admission
	// charged it already, unless its lister did not yet show the quota's status.hard when
	// the object was created (just after the quota's first sync, or a spec change); only
	// the controller can charge such an object. A creation never lowers usage: the count
	// may miss objects admission charged that the cache has not delivered yet, and writing
	// that undercount would let admission exceed the quota.
	raiseOnly
)

// pendingRecounts remembers, per quota, the strongest recount asked for since its last
// sync, and when its next full recount is due. A quota queued without a request (the sync
// period, a recheck, a retry after an error) gets a full recount; so does a raise-only
// request once a full recount is due: the queue merges a delayed requeue with an earlier
// add of the same quota, and a stream of creations must not put off the recounts that give
// back what was released.
type pendingRecounts struct {
	mu    sync.Mutex
	asked map[types.NamespacedName]recountMode
	due   map[types.NamespacedName]time.Time
}

func (p *pendingRecounts) ask(key types.NamespacedName, m recountMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked == nil {
		p.asked = map[types.NamespacedName]recountMode{}
	}
	if cur, ok := p.asked[key]; ok && cur == fullRecount {
		return
	}
	p.asked[key] = m
}

// take returns and clears what was asked for the quota; called once per sync, before it
// reads anything, so that a request made during the sync is kept for the next one.
func (p *pendingRecounts) take(key types.NamespacedName, now time.Time) recountMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.asked[key]
	delete(p.asked, key)
	if !ok || m == fullRecount {
		return fullRecount
	}
	if due, ok := p.due[key]; !ok || !now.Before(due) {
		return fullRecount
	}
	return raiseOnly
}

// synced records that a full recount succeeded and when the next one is due.
func (p *pendingRecounts) synced(key types.NamespacedName, due time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.due == nil {
		p.due = map[types.NamespacedName]time.Time{}
	}
	p.due[key] = due
}

// dueIn is how long until the quota's next full recount.
func (p *pendingRecounts) dueIn(key types.NamespacedName, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.due[key].Sub(now)
}

func (p *pendingRecounts) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.asked, key)
	delete(p.due, key)
}

// raised is the usage a raise-only recount writes: the recorded usage, raised where the
// count is higher. Resources never recorded take the count.
func raised(recorded, measured corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range measured {
		if was, ok := recorded[name]; ok && was.Cmp(q) > 0 {
			q = was
		}
		out[name] = q
	}
	return out
}
