package expectations

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	e := New(clk)
	owner := types.NamespacedName{Namespace: "ns", Name: "rs"}
	if !e.Satisfied(owner) {
		t.Fatal("an owner without expectations is satisfied")
	}
	e.ExpectCreations(owner, 2)
	e.CreationObserved(owner)
	if e.Satisfied(owner) {
		t.Fatal("one creation still pending")
	}
	e.CreationObserved(owner)
	e.CreationObserved(owner) // more observations than expected do not go negative
	if !e.Satisfied(owner) {
		t.Fatal("all creations observed")
	}

	e.ExpectDeletions(owner, []string{"ns/a", "ns/b"})
	e.DeletionObserved(owner, "ns/a")
	e.DeletionObserved(owner, "ns/zzz")
	if e.Satisfied(owner) {
		t.Fatal("ns/b still pending")
	}
	e.DeletionObserved(owner, "ns/b")
	if !e.Satisfied(owner) {
		t.Fatal("all deletions observed")
	}

	e.ExpectCreations(owner, 1)
	clk.SetTime(clk.Now().Add(Timeout + time.Second))
	if !e.Satisfied(owner) {
		t.Fatal("expectations expire")
	}
	e.ExpectCreations(owner, 1)
	e.Forget(owner)
	if !e.Satisfied(owner) {
		t.Fatal("forgotten expectations are satisfied")
	}
}
