package expectations

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kcm/kcm/internal/track"
)

func TestViews(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	creations, deletions := New(clk), New(clk)
	owner := types.NamespacedName{Namespace: "ns", Name: "ds"}
	view := Views(creations, deletions)
	if v := view("ns/ds"); v != nil {
		t.Fatalf("nothing expected: %+v", v)
	}
	creations.ExpectCreations(owner, 3)
	creations.CreationObserved(owner)
	clk.SetTime(t0.Add(time.Second))
	deletions.ExpectDeletions(owner, []string{"ns/a"})
	want := track.Expectations{Creations: 2, Deletions: 1, Since: t0}
	if v := view("ns/ds"); v == nil || *v != want {
		t.Fatalf("view = %+v, want %+v (the sum, since the oldest)", v, want)
	}
	if v := view("other/ds"); v != nil {
		t.Errorf("another owner: %+v", v)
	}
	deletions.DeletionObserved(owner, "ns/a")
	creations.CreationObserved(owner)
	creations.CreationObserved(owner)
	if v := view("ns/ds"); v != nil {
		t.Errorf("everything observed: %+v, want nil", v)
	}
	// Timed out: no longer holding syncs back, not shown.
	creations.ExpectCreations(owner, 1)
	clk.SetTime(t0.Add(time.Second + Timeout + time.Second))
	if v := view("ns/ds"); v != nil {
		t.Errorf("timed out: %+v, want nil", v)
	}
}
