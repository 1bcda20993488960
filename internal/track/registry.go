package track

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxObjects is the most objects one controller keeps a view of. An object's view is dropped
// when a sync finds it gone (a Get of the key of the controller's For kind returns NotFound);
// controllers with no For kind (built on Watches only), or whose syncs never read their
// object through their client, never see that, and this cap is their backstop: past it, the
// idle views touched longest ago are evicted, down to nine tenths of the cap.
var MaxObjects = 200_000

// Controller holds one controller's views of its objects.
type Controller struct {
	name string

	mu           sync.Mutex
	expectations func(key string) *Expectations
	stale        func(key string) *Stale
	convergence  func(key string) *Convergence

	// kind is the kind of the objects the controller's keys name, for a controller built
	// without For (its logger then does not say): ObjectsOf.
	kind schema.GroupKind
	// clock reads time for the views (a fake clock in tests).
	clock clock.PassiveClock
	// tracked: the controller's work queue was built through Queue (its views are recorded).
	tracked bool
	// requeues reads the rate limiter's count of failures in a row for a key.
	requeues func(reconcile.Request) int
	objects  map[types.NamespacedName]*object
	// errorBytes is the length of the error texts the views keep.
	errorBytes int64
}

// object is the view of one key, as small as it can be (at 20,000 pods kcm holds about
// 65,000 views): times in Unix nanoseconds, the flags in one word, and a fixed ring of the
// last syncs whose error texts are kept apart, since most syncs have none.
type object struct {
	// queuedSince: the key waits for a worker since then (0: it does not).
	queuedSince int64
	// readyAt: the queue holds the key until then (0: it does not); backoff says that the
	// rate limiter chose it (a failed or retried sync), else it is a RequeueAfter.
	readyAt int64

	// The current sync: its start, and what it asked of the queue.
	start     int64
	after     int64 // AddWithOpts{After} after Forget during the sync: RequeueAfter
	syncError string

	// waited is the time the key's syncs spent on the client's token bucket.
	waited int64
	// touched is the last time anything happened to the key (eviction order).
	touched int64

	syncs [ringSize]syncRecord
	// errs holds the error text of each ring slot whose sync failed; nil until one does.
	errs *[ringSize]string

	backoff bool
	syncing bool
	// gone: a sync found the object deleted; the view is dropped once the sync ends with
	// nothing queued.
	gone     bool
	requeued bool  // AddWithOpts{RateLimited} during the sync
	forgot   bool  // Forget during the sync (success, or before a RequeueAfter)
	next     uint8 // where the next sync goes in the ring
	count    uint8 // syncs in the ring
}

const ringSize = 4

// Sync results as stored.
const (
	resultNone uint8 = iota
	resultSuccess
	resultError
	resultRequeue
	resultRequeueAfter
)

var resultNames = [...]string{"", Success, Error, Requeue, RequeueAfter}

// syncRecord is one sync in the ring: its start, its duration in microseconds and its
// RequeueAfter in milliseconds (each saturating; 35 minutes and 24 days are beyond anything a
// view needs to tell), and its result. Its error text is in object.errs.
type syncRecord struct {
	start        int64
	durationUs   int32
	requeueAfter int32 // milliseconds
	result       uint8
}

// saturate32 is n/unit, held to an int32.
func saturate32(n, unit int64) int32 {
	return int32(min(n/unit, math.MaxInt32))
}

var (
	mu          sync.Mutex
	controllers = map[string]*Controller{}
)

// For returns the named controller's views (the controller-runtime controller's name, which
// is upstream's controller name), creating them on first use.
func For(name string) *Controller {
	mu.Lock()
	defer mu.Unlock()
	c, ok := controllers[name]
	if !ok {
		c = &Controller{name: name, clock: clock.RealClock{}, objects: map[types.NamespacedName]*object{}}
		controllers[name] = c
	}
	return c
}

// lookup returns the named controller's views if its queue is tracked.
func lookup(name string) *Controller {
	mu.Lock()
	c := controllers[name]
	mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tracked {
		return nil
	}
	return c
}

// ExpectationsFrom makes the view of a key show what f says the controller expects for it.
func (c *Controller) ExpectationsFrom(f func(key string) *Expectations) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expectations = f
}

// StaleFrom makes the view of a key show the stale-cache wait f reports for it.
func (c *Controller) StaleFrom(f func(key string) *Stale) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale = f
}

// ConvergenceFrom makes the view of a key show its convergence as f reports it.
func (c *Controller) ConvergenceFrom(f func(key string) *Convergence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.convergence = f
}

// ObjectsOf says which kind of object the controller's keys name, for a controller built with
// Watches only (controller-runtime's builder gives the others' kind to their logger): a sync
// finding its object of that kind gone then drops its view, rather than leaving it to the
// MaxObjects cap.
func (c *Controller) ObjectsOf(gk schema.GroupKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kind = gk
}

// objectKind is the kind of the objects the keys name: the logger's, else ObjectsOf's.
func (c *Controller) objectKind(group, kind string) schema.GroupKind {
	if kind != "" {
		return schema.GroupKind{Group: group, Kind: kind}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kind
}

// reset forgets every view: a new work queue (a new manager, a new term as leader) starts
// from nothing.
func (c *Controller) reset(requeues func(reconcile.Request) int) {
	register()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracked = true
	c.requeues = requeues
	c.objects = map[types.NamespacedName]*object{}
	c.errorBytes = 0
}

// dropLocked forgets key's view; c.mu is held.
func (c *Controller) dropLocked(key types.NamespacedName, o *object) {
	c.errorBytes -= errsBytes(o.errs)
	delete(c.objects, key)
}

// Key is the work-queue key of a request: "namespace/name", or "name" when cluster-scoped.
func Key(n types.NamespacedName) string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// ParseKey is Key's inverse.
func ParseKey(key string) types.NamespacedName {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Name: key}
}

// objectLocked returns the key's view, creating it; c.mu is held.
func (c *Controller) objectLocked(key types.NamespacedName, now int64) *object {
	o := c.objects[key]
	if o == nil {
		if len(c.objects) >= MaxObjects {
			c.evictLocked()
		}
		o = &object{}
		c.objects[key] = o
	}
	o.touched = now
	return o
}

// evictLocked drops the idle views touched longest ago, down to nine tenths of MaxObjects.
func (c *Controller) evictLocked() {
	type idle struct {
		key     types.NamespacedName
		touched int64
	}
	var candidates []idle
	for k, o := range c.objects {
		if !o.syncing && o.queuedSince == 0 && o.readyAt == 0 {
			candidates = append(candidates, idle{k, o.touched})
		}
	}
	slices.SortFunc(candidates, func(a, b idle) int {
		switch {
		case a.touched < b.touched:
			return -1
		case a.touched > b.touched:
			return 1
		}
		return 0
	})
	for _, i := range candidates {
		if len(c.objects) < MaxObjects*9/10 {
			break
		}
		c.dropLocked(i.key, c.objects[i.key])
	}
}

// syncErrorOf records the error a sync of key returned (the Reconciler error log line).
func (c *Controller) syncErrorOf(key types.NamespacedName, err error) {
	c.mu.Lock()
	o := c.objects[key]
	syncing := o != nil && o.syncing
	c.mu.Unlock()
	if !syncing {
		return
	}
	text := err.Error()
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objects[key]; o != nil && o.syncing {
		o.syncError = text
	}
}

// waitedOn adds d to the time key's syncs spent on the token bucket.
func (c *Controller) waitedOn(key types.NamespacedName, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objects[key]; o != nil {
		o.waited += int64(d)
	}
}

// goneObject marks key's object deleted: its view is dropped when the sync ends.
func (c *Controller) goneObject(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objects[key]; o != nil {
		o.gone = true
	}
}

// Len is the number of objects the controller holds a view of.
func (c *Controller) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.objects)
}

// View returns the controller's view of the object with the work-queue key ("namespace/name"
// or "name"), and false when the controller never saw it (or dropped it, deleted).
func (c *Controller) View(key string) (*View, bool) {
	n := ParseKey(key)
	c.mu.Lock()
	o, ok := c.objects[n]
	if !ok {
		c.mu.Unlock()
		return nil, false
	}
	cp := *o
	requeues, expectations, stale, convergence := c.requeues, c.expectations, c.stale, c.convergence
	now := c.clock.Now().UnixNano()
	c.mu.Unlock()

	v := &View{Controller: c.name, Key: key, Queue: queueOf(&cp, now), Syncs: syncsOf(&cp),
		RateLimiterWaitSeconds: time.Duration(cp.waited).Seconds()}
	if requeues != nil {
		v.Queue.Retries = requeues(reconcile.Request{NamespacedName: n})
	}
	if expectations != nil {
		v.Expectations = expectations(key)
	}
	if stale != nil {
		v.Stale = stale(key)
	}
	if convergence != nil {
		v.Convergence = convergence(key)
	}
	return v, true
}

// queueOf is what the queue holds for the key at now.
func queueOf(o *object, now int64) Queue {
	var q Queue
	if o.queuedSince != 0 {
		q.QueuedSince = timePtr(o.queuedSince)
	}
	if o.readyAt != 0 {
		if o.backoff {
			q.NextAttempt = timePtr(o.readyAt)
		} else {
			q.RequeueAt = timePtr(o.readyAt)
		}
	}
	switch {
	case o.syncing:
		q.State = Syncing
	case o.queuedSince != 0:
		q.State = Queued
	case o.readyAt > now && o.backoff:
		q.State = BackingOff
	case o.readyAt > now:
		q.State = Waiting
	case o.readyAt != 0:
		// Due: the queue has made it ready for a worker.
		q.State, q.QueuedSince = Queued, timePtr(o.readyAt)
	default:
		q.State = Idle
	}
	return q
}

// syncsOf lists the ring's syncs, oldest first.
func syncsOf(o *object) []Sync {
	syncs := make([]Sync, 0, o.count)
	for i := range int(o.count) {
		slot := (int(o.next) - int(o.count) + i + ringSize) % ringSize
		r := o.syncs[slot]
		s := Sync{Start: time.Unix(0, r.start), DurationSeconds: (time.Duration(r.durationUs) * time.Microsecond).Seconds(),
			Result: resultNames[r.result]}
		if o.errs != nil {
			s.Error = o.errs[slot]
		}
		if r.result == resultRequeueAfter {
			s.RequeueAfterSeconds = (time.Duration(r.requeueAfter) * time.Millisecond).Seconds()
		}
		syncs = append(syncs, s)
	}
	return syncs
}

func timePtr(ns int64) *time.Time {
	t := time.Unix(0, ns)
	return &t
}
