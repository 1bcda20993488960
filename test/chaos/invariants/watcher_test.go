package invariants

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestWatcher runs the Watcher on client-go's fake clientset: the objects of the first list
// are no creations; a pod created beyond its ReplicaSet's replicas afterwards is reported.
func TestWatcher(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset(replicaSet("rs", 1, ""), rsPod("rs", "a"), rsPod("rs", "b"))
	w, err := StartWithClient(ctx, cs, Options{Grace: 50 * time.Millisecond, Tick: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, rsPod("rs", "c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(w.Violations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	w.Stop()
	want := []Violation{{Rule: RuleReplicaSetReplicas, Object: "ReplicaSet chaos/rs"}}
	if diff := cmp.Diff(want, w.Violations(), cmpopts.IgnoreFields(Violation{}, "Time", "Detail")); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if got := w.Violations()[0].Detail; got != "pod c created as live pod 3, spec.replicas at most 1 within 50ms" {
		t.Errorf("detail %q", got)
	}
}

func TestSeenLate(t *testing.T) {
	created := metav1.NewTime(t0)
	for _, tt := range []struct {
		created metav1.Time
		now     time.Time
		want    bool
	}{
		{created, sec(0.5), false},
		{created, sec(6), false},
		{created, sec(6.5), true},
		{metav1.Time{}, sec(100), false}, // no creationTimestamp (a fake's object): judged
	} {
		if got := seenLate(tt.created, tt.now, 6*time.Second); got != tt.want {
			t.Errorf("seenLate(%v, %v) = %v, want %v", tt.created, tt.now.Sub(t0), got, tt.want)
		}
	}
}
