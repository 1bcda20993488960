// Package convergence keeps the convergence SLIs (issue 37): per controller, how long an
// object takes from a change the controller must act on to the controller's own rule
// showing it converged, how many objects are not converged now, and for how long the oldest
// of them has not been.
//
// Each controller's rule is a pure function next to the controller it judges (for instance
// deployment.Converged), named in its setup.Descriptor; this package keeps the clocks only.
// A clock starts when the shared cache's informer first shows an object not converged after
// a change: a new object (its Add), a new generation, or a status that went from converged
// to not (a child went away). It stops, and the histogram observes, at the first event
// showing it converged. A deleted object is forgotten, unless its rule says that being gone
// is converging (a Namespace being deleted).
//
// Nothing here watches anything: the handlers are added, on the leader only, to the
// informers the manager's cache already has for the kinds these controllers reconcile.
package convergence

import (
	"context"
	"sort"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rule is one controller's convergence rule, as its setup.Descriptor names it.
type Rule struct {
	// Controller is the controller-runtime controller's name (upstream's controller name;
	// persistentvolume-binder-controller-claims for the binder's claims).
	Controller string
	// Object is the kind the controller reconciles (its For kind), whose shared informer
	// the clocks listen to.
	Object client.Object
	// Converged judges one object of that kind: whether it has converged, and why not (or
	// what it reached) in a few words. It must be pure and cheap: it runs on every event.
	// Nil for a rule that Watch judges.
	Converged func(client.Object) (bool, string)
	// Watch, for a rule that one object of the kind cannot judge alone (endpointslice's: a
	// Service's slices against its pods), adds the rule's own handlers to the shared cache's
	// informers, starting and stopping the tracker's clocks itself (Start, Stop, Forget), and
	// returns what removes them. Nil: the tracker's handlers on Object's informer, judged by
	// Converged.
	Watch func(ctx context.Context, c cache.Cache, t *Tracker) (remove func(), err error)
	// GoneConverges: the object's deletion is its convergence (a Namespace being deleted
	// converges when it is gone); otherwise a deleted object is forgotten unobserved.
	GoneConverges bool
	// Description says in one line what converged means for this controller.
	Description string
}

// Metric families: kcm's own, beside upstream's (whose names are never reused).
var (
	durationSeconds = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "kcm",
		Name:      "convergence_duration_seconds",
		Help: "Time from a change a controller must act on (a new object, a new generation, a child that went away) " +
			"to the controller's shared cache showing the object converged by the controller's own rule.",
		// 0.1 s to 55 min.
		Buckets:        metrics.ExponentialBuckets(0.1, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})
	notConvergedDesc = metrics.NewDesc("kcm_objects_not_converged",
		"Objects a controller has seen not converged by its own rule since their last change.",
		[]string{"controller"}, nil, metrics.ALPHA, "")
	oldestDesc = metrics.NewDesc("kcm_oldest_not_converged_seconds",
		"Age of the oldest clock of the objects a controller has seen not converged: the time since its change (0: none).",
		[]string{"controller"}, nil, metrics.ALPHA, "")

	registerOnce sync.Once
)

// register registers the three families in the legacy registry kcm's /metrics serves, once.
func register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(durationSeconds)
		legacyregistry.CustomMustRegister(&collector{})
	})
}

var (
	mu       sync.Mutex
	trackers = map[string]*Tracker{}
)

// For returns the tracker of the rule's controller, registering the families on first use.
// A tracker lives as long as the process; Reset empties it for a new term as leader.
func For(r Rule) *Tracker {
	register()
	mu.Lock()
	defer mu.Unlock()
	t, ok := trackers[r.Controller]
	if !ok {
		t = NewTracker(r, clock.RealClock{}, durationSeconds.WithLabelValues(r.Controller).Observe)
		trackers[r.Controller] = t
	}
	return t
}

// Tracker keeps one controller's clocks: the objects not converged since a change, and
// how long each object took to converge the last time.
type Tracker struct {
	rule    Rule
	clock   clock.PassiveClock
	observe func(seconds float64)
	mu      sync.Mutex
	// cache is the shared cache whose informer the handlers listen to, on the leader; nil
	// when they do not (install.go).
	cache cache.Cache
	// since: key → when the object was first seen not converged after its last change.
	since map[string]clockStart
	// last: key → how long the object took to converge the last time it did.
	last map[string]float64
}

// clockStart is a running clock; unknown marks one started at a leader's initial list, whose
// change came before it looked: its duration is not observed (it would be short of the
// truth), though it counts as not converged.
type clockStart struct {
	at      time.Time
	unknown bool
}

// NewTracker is a tracker for rule reading c and observing each convergence's duration with
// observe (the histogram's series; tests pass their own).
func NewTracker(rule Rule, c clock.PassiveClock, observe func(float64)) *Tracker {
	return &Tracker{rule: rule, clock: c, observe: observe, since: map[string]clockStart{}, last: map[string]float64{}}
}

// Rule is the tracker's rule.
func (t *Tracker) Rule() Rule { return t.rule }

// Reset forgets every clock: a new term as leader starts from its informer's initial list.
func (t *Tracker) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.since = map[string]clockStart{}
	t.last = map[string]float64{}
}

// Key is the work-queue key of obj: "namespace/name", or "name" when cluster-scoped.
func Key(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// Added is the informer's Add: a new object, or (initial) one listed when the informer or
// this handler started, whose change, if any, came before the clocks looked.
func (t *Tracker) Added(obj client.Object, initial bool) {
	converged, _ := t.rule.Converged(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	key := Key(obj)
	if converged {
		t.stop(key)
		return
	}
	if _, running := t.since[key]; !running {
		t.since[key] = clockStart{at: t.clock.Now(), unknown: initial}
	}
}

// Updated is the informer's Update. A new generation not converged restarts the clock: the
// controller has a new change to act on. Otherwise a clock starts when the object is first
// seen not converged (a converged one lost a child), and stops when it shows converged.
func (t *Tracker) Updated(old, obj client.Object) {
	converged, _ := t.rule.Converged(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	key := Key(obj)
	switch _, running := t.since[key]; {
	case converged:
		t.stop(key)
	case obj.GetGeneration() > old.GetGeneration(), !running:
		t.since[key] = clockStart{at: t.clock.Now()}
	}
}

// Deleted is the informer's Delete: the object is forgotten, its clock observed first when
// the rule says that being gone is converging.
func (t *Tracker) Deleted(obj client.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := Key(obj)
	if t.rule.GoneConverges {
		t.stop(key)
	}
	delete(t.since, key)
	delete(t.last, key)
}

// Start starts key's clock at now if none runs: a change the controller must act on, for a
// rule that Watch judges.
func (t *Tracker) Start(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, running := t.since[key]; !running {
		t.since[key] = clockStart{at: t.clock.Now()}
	}
}

// Stop stops key's clock, observing its duration, if one runs: the first event showing the
// object converged, for a rule that Watch judges.
func (t *Tracker) Stop(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop(key)
}

// Forget forgets key (the object is gone), for a rule that Watch judges.
func (t *Tracker) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.since, key)
	delete(t.last, key)
}

// stop ends the key's clock, if one runs, observing its duration when its start is known.
func (t *Tracker) stop(key string) {
	s, running := t.since[key]
	if !running {
		return
	}
	delete(t.since, key)
	if s.unknown {
		return
	}
	seconds := t.clock.Since(s.at).Seconds()
	t.last[key] = seconds
	t.observe(seconds)
}

// State is one object's clock: since when it has not converged (zero when its clock does
// not run) and how long it took the last time it converged (nil: not seen).
type State struct {
	Since       time.Time
	LastSeconds *float64
}

// State returns key's clock.
func (t *Tracker) State(key string) State {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s State
	if c, ok := t.since[key]; ok {
		s.Since = c.at
	}
	if last, ok := t.last[key]; ok {
		s.LastSeconds = &last
	}
	return s
}

// NotConverged is the number of running clocks and the age of the oldest (0 when none),
// computed when asked: a scrape reads them, no event pays for them.
func (t *Tracker) NotConverged() (int, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var oldest time.Time
	for _, s := range t.since {
		if oldest.IsZero() || s.at.Before(oldest) {
			oldest = s.at
		}
	}
	if oldest.IsZero() {
		return 0, 0
	}
	return len(t.since), t.clock.Since(oldest)
}

// collector serves both gauges of every tracker at scrape time.
type collector struct {
	metrics.BaseStableCollector
}

func (*collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- notConvergedDesc
	ch <- oldestDesc
}

func (*collector) CollectWithStability(ch chan<- metrics.Metric) {
	mu.Lock()
	names := make([]string, 0, len(trackers))
	for name := range trackers {
		names = append(names, name)
	}
	all := make([]*Tracker, 0, len(names))
	sort.Strings(names)
	for _, name := range names {
		all = append(all, trackers[name])
	}
	mu.Unlock()
	for _, t := range all {
		n, oldest := t.NotConverged()
		ch <- metrics.NewLazyConstMetric(notConvergedDesc, metrics.GaugeValue, float64(n), t.rule.Controller)
		ch <- metrics.NewLazyConstMetric(oldestDesc, metrics.GaugeValue, oldest.Seconds(), t.rule.Controller)
	}
}
