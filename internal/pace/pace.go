// Package pace spaces a controller's status writes to one object.
//
// At scale kcm's ReplicaSet and Deployment controllers keep up with their pod events, so
// they wrote a ReplicaSet's status once for nearly every pod that became ready: 10,501
// rewrites of a ReplicaSet's status within a second of the previous one in the 20,000-pod
// rolling update, against upstream's 24 (issue 24). Upstream's queues were backlogged and
// each sync absorbed many events. Pacing gets the same batching without the backlog: a
// write goes out at once when the object's last one is older than the interval, and
// otherwise the sync comes back when the interval is over, by which time the work queue has
// folded every event in between into that one sync. An isolated change is never delayed;
// only the second and later writes of a burst are, by at most the interval.
package pace

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Interval is the shortest gap kcm's controllers leave between two paced status writes to
// one object. It is upstream's Job controller's batch period for pod updates.
const Interval = time.Second

// Pacer remembers, per object, when its status was last written.
type Pacer struct {
	interval time.Duration
	clock    clock.PassiveClock

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
	// swept: when entries older than the interval were last dropped. The map holds only
	// the objects written recently, not every object the controller ever wrote.
	swept time.Time
}

// New returns a Pacer that leaves interval between two writes to one object.
func New(interval time.Duration, c clock.PassiveClock) *Pacer {
	return &Pacer{interval: interval, clock: c, last: map[types.NamespacedName]time.Time{}}
}

// Wait is how long key's next write must wait (0: it may go out now). A nil Pacer never
// holds a write back.
func (p *Pacer) Wait(key types.NamespacedName) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(p.interval).Sub(p.clock.Now()))
}

// Wrote records that key's status was written now.
func (p *Pacer) Wrote(key types.NamespacedName) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	p.last[key] = now
	if now.Sub(p.swept) < 10*p.interval {
		return
	}
	for k, t := range p.last {
		if now.Sub(t) >= p.interval {
			delete(p.last, k)
		}
	}
	p.swept = now
}

// Len is how many objects the Pacer remembers.
func (p *Pacer) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.last)
}
