package track

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Queue records the controller's queue and sync history of each key: it wraps the
// controller's priority queue, whose rate limiter must be the one RateLimiter returned, and
// starts the controller's views afresh (a new queue is a new manager or a new term).
//
// controller-runtime's worker (internal/controller's processNextWorkItem and
// reconcileHandler) calls, for each sync: GetWithPriority (the sync starts), then one of
// AddWithOpts{RateLimited} (an error, or Requeue: backoff), Forget then
// AddWithOpts{After} (RequeueAfter), Forget alone (success), or nothing (a terminal error),
// then logs "Reconciler error" for an error (the logger's sink records it, Logger), and
// Done (the sync ends). AddWithOpts outside a sync of the key comes from event handlers:
// the key is queued, or waits until After. The wrapper keeps implementing
// priorityqueue.PriorityQueue, which the controller asserts to call AddWithOpts itself.
func (c *Controller) Queue(q priorityqueue.PriorityQueue[reconcile.Request], rl workqueue.TypedRateLimiter[reconcile.Request]) priorityqueue.PriorityQueue[reconcile.Request] {
	c.reset(rl.NumRequeues)
	return &queue{PriorityQueue: q, c: c}
}

// RateLimiter wraps the controller's rate limiter so that the backoff it chooses for a key
// (When) shows as the key's next attempt.
func (c *Controller) RateLimiter(rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimiter[reconcile.Request] {
	return &rateLimiter{TypedRateLimiter: rl, c: c}
}

type queue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	c *Controller
}

func (q *queue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (q *queue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q *queue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q *queue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	q.c.added(o, items)
	q.PriorityQueue.AddWithOpts(o, items...)
}

func (q *queue) GetWithPriority() (reconcile.Request, int, bool) {
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.c.started(item.NamespacedName)
	}
	return item, priority, shutdown
}

func (q *queue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

func (q *queue) Forget(item reconcile.Request) {
	q.c.forgot(item.NamespacedName)
	q.PriorityQueue.Forget(item)
}

func (q *queue) Done(item reconcile.Request) {
	q.PriorityQueue.Done(item)
	q.c.done(item.NamespacedName)
}

type rateLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	c *Controller
}

// When is called by the queue (asynchronously, when it takes in an AddWithOpts{RateLimited})
// with the backoff it applies to the key.
func (r *rateLimiter) When(item reconcile.Request) time.Duration {
	d := r.TypedRateLimiter.When(item)
	r.c.backedOff(item.NamespacedName, d)
	return d
}

// added records an AddWithOpts, as the priority queue merges it: a key ready for a worker
// stays ready; a key waiting takes the earlier time.
func (c *Controller) added(o priorityqueue.AddOpts, items []reconcile.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now().UnixNano()
	for _, item := range items {
		obj := c.objectLocked(item.NamespacedName, now)
		switch {
		case o.RateLimited:
			// The delay is the rate limiter's (backedOff).
			if obj.syncing {
				obj.requeued = true
			}
		case o.After > 0:
			if obj.syncing && obj.forgot {
				obj.after = int64(o.After)
			}
			obj.wait(now+int64(o.After), false)
		default:
			obj.ready(now)
		}
	}
}

// backedOff records the rate limiter's delay for a key.
func (c *Controller) backedOff(key types.NamespacedName, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now().UnixNano()
	obj := c.objectLocked(key, now)
	if d <= 0 {
		obj.ready(now)
		return
	}
	obj.wait(now+int64(d), true)
}

// ready: the key waits for a worker.
func (o *object) ready(now int64) {
	if o.queuedSince == 0 {
		o.queuedSince = now
	}
	o.readyAt, o.backoff = 0, false
}

// wait: the queue holds the key until at, unless it is ready already or due sooner.
func (o *object) wait(at int64, backoff bool) {
	if o.queuedSince != 0 {
		return
	}
	if o.readyAt == 0 || at < o.readyAt {
		o.readyAt, o.backoff = at, backoff
	}
}

// started: a worker took the key; the queue no longer holds it.
func (c *Controller) started(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now().UnixNano()
	obj := c.objectLocked(key, now)
	obj.queuedSince, obj.readyAt, obj.backoff = 0, 0, false
	obj.syncing, obj.start = true, now
	obj.requeued, obj.forgot, obj.after, obj.syncError = false, false, 0, ""
}

func (c *Controller) forgot(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if obj := c.objects[key]; obj != nil && obj.syncing {
		obj.forgot = true
	}
}

// done: the sync ends; its result goes in the ring, and a gone object with nothing queued
// is dropped.
func (c *Controller) done(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj := c.objects[key]
	if obj == nil || !obj.syncing {
		return
	}
	now := c.clock.Now().UnixNano()
	r := syncRecord{start: obj.start, durationUs: saturate32(now-obj.start, int64(time.Microsecond)), result: resultSuccess}
	switch {
	case obj.syncError != "":
		r.result = resultError
	case obj.requeued:
		r.result = resultRequeue
	case obj.after > 0:
		r.result, r.requeueAfter = resultRequeueAfter, saturate32(obj.after, int64(time.Millisecond))
	}
	obj.syncs[obj.next] = r
	c.setError(obj, obj.next, obj.syncError)
	obj.next = (obj.next + 1) % ringSize
	if obj.count < ringSize {
		obj.count++
	}
	obj.syncing, obj.syncError, obj.touched = false, "", now
	if obj.gone && !obj.requeued && obj.queuedSince == 0 && obj.readyAt == 0 {
		c.dropLocked(key, obj)
	}
}

// setError keeps err as the error text of ring slot i, allocating the texts on the first
// error, and counts the bytes.
func (c *Controller) setError(obj *object, i uint8, err string) {
	if obj.errs == nil {
		if err == "" {
			return
		}
		obj.errs = new([ringSize]string)
		c.errorBytes += errsSize
	}
	c.errorBytes += int64(len(err) - len(obj.errs[i]))
	obj.errs[i] = err
}

// Dirty says whether the key of the sync ctx belongs to is queued again since the sync
// started, ready for a worker once the sync ends: added by an event, or a RequeueAfter or
// AddAfter that is due now; not one waiting in the future nor a rate-limited retry. A later
// sync of the key then follows this one at once, so a reconciler may leave to it a write
// that sync would overwrite. False outside a tracked sync. It allocates nothing.
func Dirty(ctx context.Context) bool {
	s, ok := keyOf(ctx)
	if !ok {
		return false
	}
	return s.c.dirty(s.key)
}

func (c *Controller) dirty(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj := c.objects[key]
	if obj == nil || !obj.syncing {
		return false
	}
	if obj.queuedSince != 0 {
		return true
	}
	return obj.readyAt != 0 && !obj.backoff && obj.readyAt <= c.clock.Now().UnixNano()
}
