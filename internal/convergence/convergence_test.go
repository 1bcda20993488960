package convergence

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The rule under test: a ConfigMap converges when its data says done.
func done(o client.Object) (bool, string) {
	if o.(*corev1.ConfigMap).Data["state"] == "done" {
		return true, "done"
	}
	return false, "not done"
}

func object(name string, generation int64, state string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation},
		Data: map[string]string{"state": state}}
}

type fixture struct {
	clock    *clocktesting.FakeClock
	tracker  *Tracker
	observed []float64
}

func newFixture(goneConverges bool) *fixture {
	f := &fixture{clock: clocktesting.NewFakeClock(time.Unix(1000, 0))}
	f.tracker = NewTracker(Rule{Controller: "test", Object: &corev1.ConfigMap{}, Converged: done, GoneConverges: goneConverges},
		f.clock, func(s float64) { f.observed = append(f.observed, s) })
	return f
}

func (f *fixture) expectObserved(t *testing.T, want ...float64) {
	t.Helper()
	if len(f.observed) != len(want) {
		t.Fatalf("observed %v, want %v", f.observed, want)
	}
	for i := range want {
		if f.observed[i] != want[i] {
			t.Fatalf("observed %v, want %v", f.observed, want)
		}
	}
}

func (f *fixture) expectGauges(t *testing.T, n int, oldest time.Duration) {
	t.Helper()
	if gotN, gotOldest := f.tracker.NotConverged(); gotN != n || gotOldest != oldest {
		t.Fatalf("not converged: %d, oldest %v; want %d, %v", gotN, gotOldest, n, oldest)
	}
}

func TestNewObjectObservedWhenItConverges(t *testing.T) {
	f := newFixture(false)
	f.tracker.Added(object("a", 1, ""), false)
	f.clock.Step(2 * time.Second)
	f.tracker.Updated(object("a", 1, ""), object("a", 1, "working"))
	f.expectObserved(t)
	f.expectGauges(t, 1, 2*time.Second)
	if s := f.tracker.State("ns/a"); !s.Since.Equal(time.Unix(1000, 0)) || s.LastSeconds != nil {
		t.Fatalf("state while converging: %+v", s)
	}
	f.clock.Step(1500 * time.Millisecond)
	f.tracker.Updated(object("a", 1, "working"), object("a", 1, "done"))
	f.expectObserved(t, 3.5)
	f.expectGauges(t, 0, 0)
	s := f.tracker.State("ns/a")
	if !s.Since.IsZero() || s.LastSeconds == nil || *s.LastSeconds != 3.5 {
		t.Fatalf("state once converged: %+v", s)
	}
	// Later events showing it converged observe nothing more.
	f.clock.Step(time.Second)
	f.tracker.Updated(object("a", 1, "done"), object("a", 1, "done"))
	f.expectObserved(t, 3.5)
}

func TestNewObjectAlreadyConverged(t *testing.T) {
	f := newFixture(false)
	f.tracker.Added(object("a", 1, "done"), false)
	f.expectObserved(t)
	f.expectGauges(t, 0, 0)
}

func TestNewGenerationRestartsTheClock(t *testing.T) {
	f := newFixture(false)
	f.tracker.Added(object("a", 1, "done"), false)
	f.clock.Step(time.Minute)
	f.tracker.Updated(object("a", 1, "done"), object("a", 2, ""))
	f.clock.Step(4 * time.Second)
	// A newer generation while the clock runs: the controller has a new change to act on.
	f.tracker.Updated(object("a", 2, ""), object("a", 3, ""))
	f.clock.Step(time.Second)
	f.tracker.Updated(object("a", 3, ""), object("a", 3, "done"))
	f.expectObserved(t, 1)
}

func TestConvergedToNotStartsTheClock(t *testing.T) {
	f := newFixture(false)
	f.tracker.Added(object("a", 1, "done"), false)
	f.clock.Step(time.Minute)
	// Same generation: a child went away.
	f.tracker.Updated(object("a", 1, "done"), object("a", 1, "lost a pod"))
	f.clock.Step(3 * time.Second)
	f.tracker.Updated(object("a", 1, "lost a pod"), object("a", 1, "replacing"))
	f.expectGauges(t, 1, 3*time.Second)
	f.clock.Step(2 * time.Second)
	f.tracker.Updated(object("a", 1, "replacing"), object("a", 1, "done"))
	f.expectObserved(t, 5)
}

func TestDeleteForgets(t *testing.T) {
	f := newFixture(false)
	f.tracker.Added(object("a", 1, ""), false)
	f.tracker.Added(object("b", 1, "done"), false)
	f.clock.Step(time.Second)
	f.tracker.Updated(object("b", 1, "done"), object("b", 2, ""))
	f.clock.Step(time.Second)
	f.tracker.Updated(object("b", 2, ""), object("b", 2, "done"))
	f.tracker.Deleted(object("a", 1, ""))
	f.tracker.Deleted(object("b", 2, "done"))
	f.expectObserved(t, 1)
	f.expectGauges(t, 0, 0)
	if s := f.tracker.State("ns/b"); s.LastSeconds != nil {
		t.Fatalf("a deleted object's last duration is kept: %+v", s)
	}
	// Recreated under the same name: a new object, a new clock.
	f.tracker.Added(object("a", 1, ""), false)
	f.clock.Step(time.Second)
	f.tracker.Updated(object("a", 1, ""), object("a", 1, "done"))
	f.expectObserved(t, 1, 1)
}

func TestGoneConverges(t *testing.T) {
	f := newFixture(true)
	f.tracker.Added(object("a", 1, "done"), false)
	f.tracker.Updated(object("a", 1, "done"), object("a", 1, "deleting"))
	f.clock.Step(7 * time.Second)
	f.tracker.Deleted(object("a", 1, "deleting"))
	f.expectObserved(t, 7)
	f.expectGauges(t, 0, 0)
	// Gone without its clock running: nothing to observe.
	f.tracker.Added(object("b", 1, "done"), false)
	f.tracker.Deleted(object("b", 1, "done"))
	f.expectObserved(t, 7)
}

func TestInitialListCountsButIsNotObserved(t *testing.T) {
	f := newFixture(false)
	// Listed when the leader started: its change came before the clocks looked.
	f.tracker.Added(object("a", 1, ""), true)
	f.tracker.Added(object("b", 1, "done"), true)
	f.clock.Step(10 * time.Second)
	f.expectGauges(t, 1, 10*time.Second)
	f.tracker.Updated(object("a", 1, ""), object("a", 1, "done"))
	f.expectObserved(t)
	f.expectGauges(t, 0, 0)
	if s := f.tracker.State("ns/a"); s.LastSeconds != nil {
		t.Fatalf("a duration of unknown start is reported: %+v", s)
	}
	// Its next change is timed.
	f.tracker.Updated(object("a", 1, "done"), object("a", 2, ""))
	f.clock.Step(time.Second)
	f.tracker.Updated(object("a", 2, ""), object("a", 2, "done"))
	f.expectObserved(t, 1)
}

func TestGaugesOldestOfSeveral(t *testing.T) {
	f := newFixture(false)
	f.tracker.Added(object("a", 1, ""), false)
	f.clock.Step(5 * time.Second)
	f.tracker.Added(object("b", 1, ""), false)
	f.clock.Step(5 * time.Second)
	f.tracker.Added(object("c", 1, ""), false)
	f.expectGauges(t, 3, 10*time.Second)
	f.tracker.Updated(object("a", 1, ""), object("a", 1, "done"))
	f.expectGauges(t, 2, 5*time.Second)
	f.tracker.Reset()
	f.expectGauges(t, 0, 0)
}

func TestKey(t *testing.T) {
	if got := Key(object("a", 1, "")); got != "ns/a" {
		t.Errorf("namespaced key %q", got)
	}
	if got := Key(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); got != "a" {
		t.Errorf("cluster-scoped key %q", got)
	}
}

// A rule its Watch judges starts and stops the clocks itself.
func TestStartStopForget(t *testing.T) {
	f := newFixture(false)
	f.tracker.Start("ns/a")
	f.clock.Step(time.Second)
	f.tracker.Start("ns/a") // a second change while the clock runs keeps its start
	f.clock.Step(time.Second)
	f.expectGauges(t, 1, 2*time.Second)
	f.tracker.Stop("ns/a")
	f.tracker.Stop("ns/a") // no clock: nothing more
	f.expectObserved(t, 2)
	if s := f.tracker.State("ns/a"); s.LastSeconds == nil || *s.LastSeconds != 2 {
		t.Fatalf("state once converged: %+v", s)
	}
	f.tracker.Start("ns/b")
	f.tracker.Forget("ns/a")
	f.tracker.Forget("ns/b")
	f.expectGauges(t, 0, 0)
	if s := f.tracker.State("ns/a"); s.LastSeconds != nil {
		t.Fatalf("a forgotten key keeps its last duration: %+v", s)
	}
	f.expectObserved(t, 2)
}
