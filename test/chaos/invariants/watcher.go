package invariants

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options tune a Watcher.
type Options struct {
	// ExcludeNamespaces are not watched; nil means kube-system, kube-public and
	// kube-node-lease, whose pods are not the workload's.
	ExcludeNamespaces []string
	// Grace is the Checker's window; 0 means DefaultGrace.
	Grace time.Duration
	// Tick is how often due checks are judged when no event comes; 0 means one second.
	Tick time.Duration
	// MaxLag is how long after its creationTimestamp an object may be seen added and still
	// be judged as a creation; 0 means Grace + 1 s (creationTimestamp has whole seconds).
	// An object seen later comes from a relist after a gap, or a watch far behind: the
	// counts at that moment are not those at its creation, so it is taken as existing. This
	// compares the API server's clock with this process's: test/cluster runs both on one
	// machine.
	MaxLag time.Duration
	// MaxBlind is how long after a kind's watch broke, with no event of that kind since, it
	// is taken as idle rather than still broken; 0 means 30 s (the reflector's longest
	// back-off). Checks that depend on a broken kind wait meanwhile, and are dropped as
	// Unjudged if their window overlapped the break.
	MaxBlind time.Duration
}

// Watcher runs a Checker on a live cluster: shared informers for Pods, ReplicaSets,
// Deployments, Jobs, StatefulSets, DaemonSets (all namespaces but the excluded) and
// Namespaces feed it, under one lock, with the Watcher's clock. Informers resume a cut
// watch from its last resourceVersion and relist after a 410 Gone (etcd compaction); a
// relist collapses events, so what the Watcher reports is a lower bound (see the package
// documentation). A relist hands over the objects that vanished first (client-go's in-order
// informers), then the new ones, which are judged as creations only if seen within MaxLag
// of their creationTimestamp.
type Watcher struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	stop   sync.Once
	shut   []func()

	mu          sync.Mutex
	checker     *Checker
	maxLag      time.Duration
	maxBlind    time.Duration
	watchErrors int
	lateAdds    int
	// broken holds when each kind's watch broke, until its next event or MaxBlind.
	broken map[string]time.Time
}

// Start watches the API server of cfg with its own client (not through kcm) and returns
// once every informer has its first list, which is taken as existing (no creations). ctx
// bounds that wait only: the Watcher runs until Stop.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Watcher, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "chaos-invariants"
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return StartWithClient(ctx, cs, opts)
}

// StartWithClient is Start with a ready client.
func StartWithClient(ctx context.Context, cs kubernetes.Interface, opts Options) (*Watcher, error) {
	excluded := opts.ExcludeNamespaces
	if excluded == nil {
		excluded = []string{metav1.NamespaceSystem, metav1.NamespacePublic, "kube-node-lease"}
	}
	var selector []string
	for _, ns := range excluded {
		selector = append(selector, "metadata.namespace!="+ns)
	}
	tick := opts.Tick
	if tick <= 0 {
		tick = time.Second
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &Watcher{cancel: cancel, checker: NewChecker(opts.Grace), maxLag: opts.MaxLag, maxBlind: opts.MaxBlind, broken: map[string]time.Time{}}
	if w.maxLag <= 0 {
		w.maxLag = w.checker.grace + time.Second
	}
	if w.maxBlind <= 0 {
		w.maxBlind = 30 * time.Second
	}
	workload := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = strings.Join(selector, ",")
	}))
	cluster := informers.NewSharedInformerFactory(cs, 0)
	w.shut = []func(){workload.Shutdown, cluster.Shutdown}
	all := map[string]cache.SharedIndexInformer{
		"Pod":         workload.Core().V1().Pods().Informer(),
		"ReplicaSet":  workload.Apps().V1().ReplicaSets().Informer(),
		"Deployment":  workload.Apps().V1().Deployments().Informer(),
		"StatefulSet": workload.Apps().V1().StatefulSets().Informer(),
		"DaemonSet":   workload.Apps().V1().DaemonSets().Informer(),
		"Job":         workload.Batch().V1().Jobs().Informer(),
		"Namespace":   cluster.Core().V1().Namespaces().Informer(),
	}
	var synced []cache.InformerSynced
	for kind, inf := range all {
		if err := inf.SetWatchErrorHandlerWithContext(w.watchError(kind)); err != nil {
			cancel()
			return nil, err
		}
		if _, err := inf.AddEventHandler(w.handler(kind)); err != nil {
			cancel()
			return nil, err
		}
		synced = append(synced, inf.HasSynced)
	}
	workload.Start(runCtx.Done())
	cluster.Start(runCtx.Done())

	wait := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-runCtx.Done():
		}
		close(wait)
	}()
	if !cache.WaitForCacheSync(wait, synced...) {
		w.Stop()
		return nil, errors.Join(errors.New("invariants: the informers' first lists did not complete"), ctx.Err())
	}

	w.done.Add(1)
	go func() {
		defer w.done.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				w.tick()
			}
		}
	}()
	return w, nil
}

func (w *Watcher) handler(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { w.observe(kind, watch.Added, obj, initial) },
		UpdateFunc: func(_, obj any) { w.observe(kind, watch.Modified, obj, false) },
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj // deleted while the watch was cut: its last state known
			}
			w.observe(kind, watch.Deleted, obj, false)
		},
	}
}

func (w *Watcher) observe(kind string, t watch.EventType, obj any, existing bool) {
	o, ok := obj.(runtime.Object)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The clock is read under the lock, so that the Checker's time never goes backwards.
	now := time.Now()
	if _, ok := w.broken[kind]; ok {
		// The first event after a break: the kind's events flow again.
		w.checker.Sight(kind, now)
		delete(w.broken, kind)
	}
	if m, err := apimeta.Accessor(o); err == nil && t == watch.Added && !existing && seenLate(m.GetCreationTimestamp(), now, w.maxLag) {
		existing = true
		w.lateAdds++
	}
	w.checker.Observe(Event{Type: t, Object: o, Time: now, Existing: existing})
}

// seenLate reports whether an object created at created, seen added at now, was seen more
// than maxLag after its creation.
func seenLate(created metav1.Time, now time.Time, maxLag time.Duration) bool {
	return !created.IsZero() && now.Sub(created.Time) > maxLag
}

// watchError notes a broken watch of kind: its events may come late from now on.
func (w *Watcher) watchError(kind string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		w.mu.Lock()
		w.watchErrors++
		now := time.Now()
		if _, ok := w.broken[kind]; !ok {
			w.broken[kind] = now
		}
		w.checker.Blind(kind, now)
		w.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

// tick judges the due checks, first taking a kind broken for longer than MaxBlind as idle.
func (w *Watcher) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for kind, since := range w.broken {
		if now.Sub(since) > w.maxBlind {
			w.checker.Sight(kind, since.Add(w.maxBlind))
			delete(w.broken, kind)
		}
	}
	w.checker.Tick(now)
}

// Unjudged counts the checks not judged because a watch they depend on broke within their
// window (see Checker.Blind).
func (w *Watcher) Unjudged() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checker.Unjudged()
}

// LateAdds counts the objects seen added more than MaxLag after their creation, and so not
// judged as creations.
func (w *Watcher) LateAdds() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lateAdds
}

// Violations returns the violations judged so far; a creation is judged Grace after it was
// seen, all of them at Stop.
func (w *Watcher) Violations() []Violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checker.Violations()
}

// MaxOvershoot returns the worst live pods minus spec.replicas by Deployment
// "namespace/name" (see Checker.MaxOvershoot).
func (w *Watcher) MaxOvershoot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checker.MaxOvershoot()
}

// WatchErrors counts the watches that broke (a cut connection, a 410 Gone after etcd
// compaction): after each the informer resumed or relisted and may have collapsed events.
func (w *Watcher) WatchErrors() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watchErrors
}

// Stop ends the watches and judges every deferred check; safe to call twice. Violations
// and MaxOvershoot stay readable.
func (w *Watcher) Stop() {
	w.stop.Do(func() {
		w.cancel()
		for _, shut := range w.shut {
			shut()
		}
		w.done.Wait()
		w.mu.Lock()
		w.checker.Flush()
		w.mu.Unlock()
	})
}
