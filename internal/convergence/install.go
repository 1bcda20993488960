package convergence

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/track"
)

// Install makes the rule's controller keep its convergence clocks while the manager leads:
// a Runnable needing leader election adds the tracker's handlers to the manager's shared
// informer of the rule's kind (the one the controller's own watch uses: no new watch) and
// removes them when the manager stops. The controller's per-object view shows its clock.
func Install(mgr manager.Manager, r Rule) error {
	t := For(r)
	track.For(r.Controller).ConvergenceFrom(t.Convergence)
	return mgr.Add(&listener{tracker: t, cache: mgr.GetCache()})
}

// listener is the Runnable adding the tracker's handlers on the leader.
type listener struct {
	tracker *Tracker
	cache   cache.Cache
}

// NeedLeaderElection: only the leader's controllers act, so only the leader keeps clocks.
func (*listener) NeedLeaderElection() bool { return true }

func (l *listener) Start(ctx context.Context) error {
	t := l.tracker
	t.Reset()
	if t.rule.Watch != nil {
		remove, err := t.rule.Watch(ctx, l.cache, t)
		if err != nil {
			return fmt.Errorf("convergence of %s: %w", t.rule.Controller, err)
		}
		t.listen(l.cache)
		logStarted(t)
		<-ctx.Done()
		t.listen(nil)
		remove()
		return nil
	}
	informer, err := l.cache.GetInformer(ctx, t.rule.Object)
	if err != nil {
		return fmt.Errorf("convergence of %s: %w", t.rule.Controller, err)
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if o, ok := obj.(client.Object); ok {
				t.Added(o, initial)
			}
		},
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(client.Object)
			n, ok2 := obj.(client.Object)
			if ok1 && ok2 {
				t.Updated(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(client.Object); ok {
				t.Deleted(o)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("convergence of %s: %w", t.rule.Controller, err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // stopping
	}
	t.listen(l.cache)
	logStarted(t)
	<-ctx.Done()
	t.listen(nil)
	_ = informer.RemoveEventHandler(reg)
	return nil
}

// logStarted says, once the handlers have seen the informer's initial list, that from now
// on a new object's clock starts at its Add (one created before is listed, and its first
// convergence is not observed).
func logStarted(t *Tracker) {
	log.Log.WithName("convergence").Info("Convergence clocks started", "controller", t.rule.Controller)
}

// listen records the cache whose informer the handlers listen to; nil: they stopped, and
// the clocks are dropped (a replica that no longer leads serves 0, as a standby).
func (t *Tracker) listen(c cache.Cache) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cache = c
	if c == nil {
		t.since = map[string]clockStart{}
		t.last = map[string]float64{}
	}
}

// Listening reports whether the tracker's handlers are in place and have seen the
// informer's initial list: from then on a new object's clock starts at its Add.
func (t *Tracker) Listening() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cache != nil
}

// Lookup returns the named controller's tracker; nil when none was installed.
func Lookup(controller string) *Tracker {
	mu.Lock()
	defer mu.Unlock()
	return trackers[controller]
}

// Convergence is key's convergence as the controller's per-object view shows it (its
// track source): the rule's judgement of the object the shared cache holds, with its clock.
// Nil while not leading (reading the cache then could start an informer the controllers have
// not) and for an object the cache does not hold.
func (t *Tracker) Convergence(key string) *track.Convergence {
	t.mu.Lock()
	c := t.cache
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	obj, ok := t.rule.Object.DeepCopyObject().(client.Object)
	if !ok {
		return nil
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil
	}
	s := t.State(key)
	converged := s.Since.IsZero()
	if t.rule.Converged != nil {
		converged, _ = t.rule.Converged(obj)
	}
	out := &track.Convergence{Converged: converged, Rule: t.rule.Description}
	if !s.Since.IsZero() {
		since := s.Since
		out.Since = &since
	}
	out.LastSeconds = s.LastSeconds
	return out
}
