package track

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fakeQueue stands for controller-runtime's priority queue: it hands out the item it is
// told to, and takes in a rate-limited add as the real one does, asking the rate limiter.
type fakeQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	rl   workqueue.TypedRateLimiter[reconcile.Request]
	next reconcile.Request
}

func (q *fakeQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.RateLimited {
		for _, item := range items {
			q.rl.When(item)
		}
	}
}

func (q *fakeQueue) GetWithPriority() (reconcile.Request, int, bool) { return q.next, 0, false }
func (q *fakeQueue) Forget(item reconcile.Request)                   { q.rl.Forget(item) }
func (q *fakeQueue) Done(reconcile.Request)                          {}

// fixture is a controller's tracked queue on a fake clock, with the worker's calls.
type fixture struct {
	t     *testing.T
	c     *Controller
	clock *clocktesting.FakeClock
	q     priorityqueue.PriorityQueue[reconcile.Request]
	fq    *fakeQueue
	log   logr.Logger
}

var epoch = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	name := strings.ReplaceAll(t.Name(), "/", "-")
	c := For(name)
	clk := clocktesting.NewFakeClock(epoch)
	c.mu.Lock()
	// A test run again in this process (-count) starts from a controller with no sources.
	c.clock, c.kind, c.expectations, c.stale, c.convergence = clk, schema.GroupKind{}, nil, nil, nil
	c.mu.Unlock()
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Second, time.Minute)
	rl := c.RateLimiter(limiter)
	fq := &fakeQueue{rl: rl}
	q := c.Queue(fq, limiter)
	// The logger controller-runtime's builder derives from the manager's.
	log := Logger(funcr.New(func(string, string) {}, funcr.Options{})).WithValues("controller", name).WithValues("controllerGroup", "", "controllerKind", "Pod")
	return &fixture{t: t, c: c, clock: clk, q: q, fq: fq, log: log}
}

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// syncCtx is the context of a sync of r, as controller-runtime's reconcileHandler makes it.
func (f *fixture) syncCtx(r reconcile.Request) (context.Context, logr.Logger) {
	log := f.log.WithValues("Pod", r.String()).WithValues("namespace", r.Namespace, "name", r.Name).WithValues("reconcileID", "id")
	return logr.NewContext(context.Background(), log), log
}

// sync runs one sync of r taking d, whose result does what the worker does with it.
func (f *fixture) sync(r reconcile.Request, d time.Duration, result func(log logr.Logger)) {
	f.fq.next = r
	got, _, _ := f.q.GetWithPriority()
	_, log := f.syncCtx(got)
	f.clock.Step(d)
	result(log)
	f.q.Done(got)
}

func (f *fixture) view(key string) *View {
	f.t.Helper()
	v, ok := f.c.View(key)
	if !ok {
		f.t.Fatalf("no view of %s", key)
	}
	return v
}

func success(q priorityqueue.PriorityQueue[reconcile.Request], r reconcile.Request) func(logr.Logger) {
	return func(logr.Logger) { q.Forget(r) }
}

func TestQueuedSyncingSuccess(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	f.q.Add(r)
	v := f.view("ns/a")
	if v.Queue.State != Queued || v.Queue.QueuedSince == nil || !v.Queue.QueuedSince.Equal(epoch) {
		t.Fatalf("after Add: %+v, want Queued since %s", v.Queue, epoch)
	}
	f.fq.next = r
	f.q.GetWithPriority()
	if v := f.view("ns/a"); v.Queue.State != Syncing || v.Queue.QueuedSince != nil {
		t.Fatalf("after Get: %+v, want Syncing", v.Queue)
	}
	f.clock.Step(300 * time.Millisecond)
	f.q.Forget(r)
	f.q.Done(r)
	v = f.view("ns/a")
	if v.Queue.State != Idle {
		t.Errorf("after Done: %s, want Idle", v.Queue.State)
	}
	if len(v.Syncs) != 1 || v.Syncs[0].Result != Success || v.Syncs[0].DurationSeconds != 0.3 || !v.Syncs[0].Start.Equal(epoch) {
		t.Errorf("syncs = %+v, want one Success of 0.3 s at %s", v.Syncs, epoch)
	}
}

func TestErrorBacksOff(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	for i := range 2 {
		f.sync(r, time.Second, func(log logr.Logger) {
			f.q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, r)
			log.Error(errors.New("pods \"x\" is forbidden: exceeded quota"), "Reconciler error")
		})
		v := f.view("ns/a")
		// The exponential limiter: 5 s, then 10 s, from the time of the add.
		want := f.clock.Now().Add(time.Duration(5<<i) * time.Second)
		if v.Queue.State != BackingOff || v.Queue.Retries != i+1 || v.Queue.NextAttempt == nil || !v.Queue.NextAttempt.Equal(want) {
			t.Fatalf("after failure %d: %+v (next %v), want BackingOff, %d retries, next attempt %s", i+1, v.Queue, v.Queue.NextAttempt, i+1, want)
		}
		last := v.Syncs[len(v.Syncs)-1]
		if last.Result != Error || !strings.Contains(last.Error, "exceeded quota") {
			t.Fatalf("last sync = %+v, want Error with the quota's message", last)
		}
	}
	// Due: the queue has made it ready.
	f.clock.Step(11 * time.Second)
	if v := f.view("ns/a"); v.Queue.State != Queued {
		t.Errorf("past the next attempt: %s, want Queued", v.Queue.State)
	}
	// A success forgets the failures.
	f.sync(r, time.Second, success(f.q, r))
	if v := f.view("ns/a"); v.Queue.State != Idle || v.Queue.Retries != 0 || v.Syncs[2].Result != Success || v.Syncs[2].Error != "" {
		t.Errorf("after a success: %+v %+v, want Idle, no retries", v.Queue, v.Syncs)
	}
	// The ring wraps: successes take the failed syncs' slots, and their texts go with them.
	withErrors := f.c.Bytes()
	for range ringSize {
		f.sync(r, time.Second, success(f.q, r))
	}
	v := f.view("ns/a")
	for _, s := range v.Syncs {
		if s.Result != Success || s.Error != "" {
			t.Errorf("after %d successes: %+v, want only successes without error text", ringSize, v.Syncs)
		}
	}
	if got, want := withErrors-f.c.Bytes(), 2*int64(len(`pods "x" is forbidden: exceeded quota`)); got != want {
		t.Errorf("bytes freed by overwriting the failed syncs: %d, want their texts' %d", got, want)
	}
}

func TestRequeueWithoutError(t *testing.T) {
	f := newFixture(t)
	r := req("", "node-1")
	f.sync(r, time.Second, func(logr.Logger) { f.q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, r) })
	v := f.view("node-1")
	if v.Queue.State != BackingOff || v.Syncs[0].Result != Requeue {
		t.Errorf("%+v %+v, want BackingOff after a Requeue", v.Queue, v.Syncs)
	}
}

func TestRequeueAfterWaits(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	f.sync(r, time.Second, func(logr.Logger) {
		f.q.Forget(r)
		f.q.AddWithOpts(priorityqueue.AddOpts{After: 30 * time.Second}, r)
	})
	v := f.view("ns/a")
	want := epoch.Add(31 * time.Second)
	if v.Queue.State != Waiting || v.Queue.RequeueAt == nil || !v.Queue.RequeueAt.Equal(want) || v.Queue.NextAttempt != nil {
		t.Fatalf("%+v, want Waiting until %s", v.Queue, want)
	}
	if v.Syncs[0].Result != RequeueAfter || v.Syncs[0].RequeueAfterSeconds != 30 {
		t.Errorf("sync = %+v, want RequeueAfter 30 s", v.Syncs[0])
	}
	// An event meanwhile makes it ready at once, as the priority queue does.
	f.q.Add(r)
	if v := f.view("ns/a"); v.Queue.State != Queued {
		t.Errorf("after an Add: %s, want Queued", v.Queue.State)
	}
}

func TestRingKeepsTheNewest(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	for range 6 {
		f.sync(r, time.Second, success(f.q, r))
	}
	v := f.view("ns/a")
	if len(v.Syncs) != ringSize {
		t.Fatalf("%d syncs, want %d", len(v.Syncs), ringSize)
	}
	for i, s := range v.Syncs {
		// Syncs 3 to 6, each a second after the previous.
		if want := epoch.Add(time.Duration(i+2) * time.Second); !s.Start.Equal(want) {
			t.Errorf("sync %d started %s, want %s (oldest first)", i, s.Start, want)
		}
	}
}

func TestGoneObjectIsDropped(t *testing.T) {
	f := newFixture(t)
	cl := Client(fake.NewClientBuilder().Build())
	gone, kept := req("ns", "gone"), req("ns", "kept")
	f.sync(gone, time.Second, func(log logr.Logger) {
		ctx := logr.NewContext(context.Background(), log)
		// Another kind's NotFound says nothing of the object.
		if err := cl.Get(ctx, gone.NamespacedName, &corev1.ConfigMap{}); err == nil {
			t.Fatal("want NotFound")
		}
		if _, ok := f.c.View("ns/gone"); !ok {
			t.Fatal("a ConfigMap's NotFound dropped the Pod's view")
		}
		_ = cl.Get(ctx, gone.NamespacedName, &corev1.Pod{})
		f.q.Forget(gone)
	})
	if _, ok := f.c.View("ns/gone"); ok {
		t.Error("the view of a deleted object is kept")
	}
	// Gone but queued again meanwhile (recreated): kept.
	f.sync(kept, time.Second, func(log logr.Logger) {
		_ = cl.Get(logr.NewContext(context.Background(), log), kept.NamespacedName, &corev1.Pod{})
		f.q.Add(kept)
	})
	if v, ok := f.c.View("ns/kept"); !ok || v.Queue.State != Queued {
		t.Errorf("view of a key queued again = %+v, %v; want kept, Queued", v, ok)
	}
}

func TestEvictionPastTheCap(t *testing.T) {
	defer func(n int) { MaxObjects = n }(MaxObjects)
	MaxObjects = 10
	f := newFixture(t)
	busy := req("ns", "busy")
	f.q.Add(busy)
	for i := range 20 {
		f.clock.Step(time.Second)
		r := req("ns", fmt.Sprint(i))
		f.sync(r, 0, success(f.q, r))
	}
	if n := f.c.Len(); n > MaxObjects {
		t.Errorf("%d views, want at most %d", n, MaxObjects)
	}
	if _, ok := f.c.View("ns/busy"); !ok {
		t.Error("a queued key was evicted")
	}
	if _, ok := f.c.View("ns/19"); !ok {
		t.Error("the newest key was evicted")
	}
	if _, ok := f.c.View("ns/0"); ok {
		t.Error("the oldest idle key was kept")
	}
}

func TestNewQueueStartsAfresh(t *testing.T) {
	f := newFixture(t)
	f.q.Add(req("ns", "a"))
	limiter := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	f.c.Queue(&fakeQueue{rl: limiter}, limiter)
	if _, ok := f.c.View("ns/a"); ok {
		t.Error("a new queue kept the old queue's views")
	}
}

func TestSourcesShowInTheView(t *testing.T) {
	f := newFixture(t)
	f.q.Add(req("ns", "a"))
	since := epoch.Add(-time.Minute)
	f.c.ExpectationsFrom(func(key string) *Expectations {
		if key != "ns/a" {
			return nil
		}
		return &Expectations{Creations: 2, Deletions: 1, Since: since}
	})
	f.c.StaleFrom(func(string) *Stale { return &Stale{Resource: "pods", Written: "12", Seen: "10", Since: since} })
	v := f.view("ns/a")
	if v.Expectations == nil || v.Expectations.Creations != 2 || v.Expectations.Deletions != 1 || v.Stale == nil || v.Stale.Written != "12" {
		t.Errorf("view = %+v, want the expectations and stale wait the sources report", v)
	}
}

func TestTokenBucketWaitCountsForTheSyncedKey(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	f.q.Add(r)
	f.fq.next = r
	f.q.GetWithPriority()
	// 20 QPS, a burst of 1: the first token at once, each next one 50 ms later.
	rl := RateLimiter(flowcontrol.NewTokenBucketRateLimiter(20, 1))
	ctx, _ := f.syncCtx(r)
	for range 3 {
		if err := rl.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waited := f.view("ns/a").RateLimiterWaitSeconds
	if waited < 0.08 || waited > 0.5 {
		t.Errorf("waited %.3f s, want about 0.1 s (two tokens at 20 QPS)", waited)
	}
	// Outside a sync (the bucket empty: this one waits too): counted nowhere.
	if err := rl.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := f.view("ns/a").RateLimiterWaitSeconds; after != waited {
		t.Errorf("a wait outside the sync added %.3f s to the key", after-waited)
	}
	if rl.QPS() != 20 {
		t.Errorf("QPS = %v, want the bucket's", rl.QPS())
	}
}

func TestLoggerKeepsTheKeyOfTheSync(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	ctx, log := f.syncCtx(r)
	// A reconciler's own values later do not change the key.
	ctx = logr.NewContext(ctx, log.WithValues("name", "child", "namespace", "other"))
	s, ok := keyOf(ctx)
	if !ok || s.key != r.NamespacedName || s.c != f.c || s.kind != "Pod" {
		t.Fatalf("keyOf = %+v, %v; want %s of %s", s, ok, r, f.c.name)
	}
	// The controller's own logger, outside a sync, has no key.
	if _, ok := keyOf(logr.NewContext(context.Background(), f.log.WithValues("namespace", "ns", "name", "a"))); ok {
		t.Error("a logger without reconcileID has a key")
	}
}

func TestLoggerKeepsTheCaller(t *testing.T) {
	var caller string
	base := funcr.New(func(_, args string) { caller = args }, funcr.Options{LogCaller: funcr.All})
	log := Logger(base)
	log.Info("root")
	_, file, _, _ := runtime.Caller(0)
	want := fmt.Sprintf(`"file"=%q`, file[strings.LastIndex(file, "/")+1:])
	if !strings.Contains(caller, want) {
		t.Errorf("root logger's caller: %s, want %s", caller, want)
	}
	log.WithValues("controller", "x").WithName("n").Error(errors.New("e"), "derived")
	if !strings.Contains(caller, want) {
		t.Errorf("derived logger's caller: %s, want %s", caller, want)
	}
}

func TestParsePath(t *testing.T) {
	for _, tt := range []struct {
		path, controller, key string
		ok                    bool
	}{
		{"/replicaset-controller/objects/ns/web-1", "replicaset-controller", "ns/web-1", true},
		{"/persistentvolume-binder-controller-volumes/objects/pv-1", "persistentvolume-binder-controller-volumes", "pv-1", true},
		{"/replicaset-controller/objects/ns/web-1/extra", "", "", false},
		{"/replicaset-controller/objects", "", "", false},
		{"/replicaset-controller/objects/", "", "", false},
		{"/replicaset-controller/graph/ns/a", "", "", false},
		{"/replicaset-controller/objects//a", "", "", false},
		{"", "", "", false},
	} {
		c, k, ok := parsePath(tt.path)
		if c != tt.controller || k != tt.key || ok != tt.ok {
			t.Errorf("parsePath(%q) = %q, %q, %v; want %q, %q, %v", tt.path, c, k, ok, tt.controller, tt.key, tt.ok)
		}
	}
}

func TestHandler(t *testing.T) {
	f := newFixture(t)
	f.q.Add(req("ns", "a"))
	f.q.Add(req("", "node-1"))
	h := Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	for _, key := range []string{"ns/a", "node-1"} {
		code, body := get("/" + f.c.name + "/objects/" + key)
		var v View
		if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil || v.Key != key || v.Controller != f.c.name || v.Queue.State != Queued {
			t.Errorf("GET %s: %d %s (%v), want 200 and the view, Queued", key, code, body, err)
		}
	}
	for _, path := range []string{"/" + f.c.name + "/objects/ns/never-seen", "/no-such-controller/objects/ns/a", "/" + f.c.name + "/objects"} {
		if code, body := get(path); code != http.StatusNotFound || body == "" {
			t.Errorf("GET %s: %d %q, want 404 with a message", path, code, body)
		}
	}
}

// TestBytesPerObject measures the memory of 20,000 views (the heap before and after) against
// the estimate kcm_object_views_bytes reports.
func TestBytesPerObject(t *testing.T) {
	const n = 20_000
	f := newFixture(t)
	reqs := make([]reconcile.Request, n)
	for i := range reqs {
		reqs[i] = req("namespace-with-a-name", fmt.Sprintf("pod-%d", i))
	}
	var before, after runtime.MemStats
	// Twice: the first collection leaves sync.Pools' victims, freed by the second.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, r := range reqs {
		f.q.Add(r)
		f.sync(r, time.Millisecond, success(f.q, r))
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	measured := float64(after.HeapAlloc-before.HeapAlloc) / n
	estimated := float64(f.c.Bytes()) / n
	t.Logf("%d views: %.0f bytes per view measured (heap), %.0f estimated (kcm_object_views_bytes)", n, measured, estimated)
	if estimated < measured/2 || estimated > measured*2 {
		t.Errorf("estimate %.0f bytes per view is not within a factor 2 of the measured %.0f", estimated, measured)
	}
	runtime.KeepAlive(reqs)
}

// BenchmarkSync is the cost the views add to one sync: the queue's four calls.
func BenchmarkSync(b *testing.B) {
	c := For("benchmark")
	limiter := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	fq := &fakeQueue{rl: c.RateLimiter(limiter)}
	q := c.Queue(fq, limiter)
	reqs := make([]reconcile.Request, 1000)
	for i := range reqs {
		reqs[i] = req("ns", fmt.Sprintf("pod-%d", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := reqs[i%len(reqs)]
		q.Add(r)
		fq.next = r
		q.GetWithPriority()
		q.Forget(r)
		q.Done(r)
	}
}

func TestGoneObjectOfAControllerWithoutFor(t *testing.T) {
	f := newFixture(t)
	// The builder's logger of a controller built with Watches only: no kind.
	f.log = Logger(funcr.New(func(string, string) {}, funcr.Options{})).WithValues("controller", f.c.name)
	cl := Client(fake.NewClientBuilder().Build())
	r := req("ns", "gone")
	get := func() {
		f.sync(r, time.Second, func(log logr.Logger) {
			_ = cl.Get(logr.NewContext(context.Background(), log), r.NamespacedName, &corev1.Pod{})
			f.q.Forget(r)
		})
	}
	get()
	if _, ok := f.c.View("ns/gone"); !ok {
		t.Fatal("dropped with no kind to compare with")
	}
	f.c.ObjectsOf(schema.GroupKind{Kind: "Pod"})
	get()
	if _, ok := f.c.View("ns/gone"); ok {
		t.Error("the view of a deleted object of the ObjectsOf kind is kept")
	}
}

// TestMountedBesideAControllersOwnDebugPath mounts the views as setup.Context.DebugHandler
// does, beside a controller's own handler at /debug/controllers/<name> (the garbage
// collector's graph): each path reaches its own.
func TestMountedBesideAControllersOwnDebugPath(t *testing.T) {
	f := newFixture(t)
	f.q.Add(req("ns", "a"))
	m := mux.NewPathRecorderMux("test")
	views := http.StripPrefix(DebugPath, Handler())
	m.UnlistedHandle(DebugPath, views)
	m.UnlistedHandlePrefix(DebugPath+"/", views)
	own := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "graph") })
	m.UnlistedHandle(DebugPath+"/garbage-collector-controller", own)
	m.UnlistedHandlePrefix(DebugPath+"/garbage-collector-controller/", own)
	for path, want := range map[string]string{
		DebugPath + "/garbage-collector-controller":       "graph",
		DebugPath + "/garbage-collector-controller/graph": "graph",
		DebugPath + "/" + f.c.name + "/objects/ns/a":      `"state": "Queued"`,
	} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d %s, want %s", path, rec.Code, rec.Body.String(), want)
		}
	}
}

// TestLoggerKeepsTheCallerThroughControllerRuntimesRoot: the manager's default logger is
// controller-runtime's delegating root (ctrl.Log), which cannot be told of the sink's frame;
// the log lines of the root itself keep their caller too.
func TestLoggerKeepsTheCallerThroughControllerRuntimesRoot(t *testing.T) {
	var (
		mu     sync.Mutex
		caller string
	)
	setRootOnce.Do(func() {
		ctrllog.SetLogger(funcr.New(func(_, args string) { rootLines(args) }, funcr.Options{LogCaller: funcr.All}))
	})
	rootLines = func(args string) { mu.Lock(); caller = args; mu.Unlock() }
	last := func() string { mu.Lock(); defer mu.Unlock(); return caller }
	log := Logger(ctrllog.Log)
	_, file, _, _ := runtime.Caller(0)
	want := fmt.Sprintf(`"file"=%q`, file[strings.LastIndex(file, "/")+1:])
	log.Info("root")
	if !strings.Contains(last(), want) {
		t.Errorf("root logger's caller: %s, want %s", last(), want)
	}
	log.WithValues("controller", "x").Info("derived")
	if !strings.Contains(last(), want) {
		t.Errorf("derived logger's caller: %s, want %s", last(), want)
	}
}

var (
	setRootOnce sync.Once
	rootLines   = func(string) {}
)

// BenchmarkSyncUntracked is BenchmarkSync's loop on the queue alone: the difference is what
// the views cost a sync.
func BenchmarkSyncUntracked(b *testing.B) {
	limiter := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	fq := &fakeQueue{rl: limiter}
	var q priorityqueue.PriorityQueue[reconcile.Request] = fq
	reqs := make([]reconcile.Request, 1000)
	for i := range reqs {
		reqs[i] = req("ns", fmt.Sprintf("pod-%d", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := reqs[i%len(reqs)]
		q.AddWithOpts(priorityqueue.AddOpts{}, r)
		fq.next = r
		q.GetWithPriority()
		q.Forget(r)
		q.Done(r)
	}
}

func TestDirty(t *testing.T) {
	f := newFixture(t)
	r := req("ns", "a")
	ctx, _ := f.syncCtx(r)
	if Dirty(ctx) {
		t.Fatal("a key not syncing is dirty")
	}
	if Dirty(context.Background()) {
		t.Fatal("a context outside a sync is dirty")
	}
	start := func() {
		f.fq.next = r
		f.q.GetWithPriority()
	}
	end := func() {
		f.q.Forget(r)
		f.q.Done(r)
	}

	// Queued before the sync started: the sync takes it, it is not dirty.
	f.q.Add(r)
	start()
	if Dirty(ctx) {
		t.Error("the sync's own queueing counts as dirty")
	}
	// A RequeueAfter in the future is not dirty; once due, it is.
	f.q.AddAfter(r, time.Second)
	if Dirty(ctx) {
		t.Error("an AddAfter in the future is dirty")
	}
	f.clock.Step(time.Second)
	if !Dirty(ctx) {
		t.Error("a due AddAfter is not dirty")
	}
	end()

	// A rate-limited retry is not dirty, before or after its backoff is chosen.
	start()
	f.q.AddRateLimited(r)
	if Dirty(ctx) {
		t.Error("a rate-limited retry is dirty")
	}
	f.q.Done(r)

	// An event's Add during the sync is; the next sync starts clean.
	start()
	f.q.Add(r)
	if !Dirty(ctx) {
		t.Error("an Add during the sync is not dirty")
	}
	if other, _ := f.syncCtx(req("ns", "b")); Dirty(other) {
		t.Error("another key is dirty")
	}
	end()
	if Dirty(ctx) {
		t.Error("dirty after the sync ended")
	}
	start()
	if Dirty(ctx) {
		t.Error("the next sync starts dirty")
	}
	end()

	if n := testing.AllocsPerRun(100, func() { Dirty(ctx) }); n != 0 {
		t.Errorf("Dirty allocates %v times a call", n)
	}
}
