package pace

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestWait(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	p := New(time.Second, clk)
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}

	if w := p.Wait(a); w != 0 {
		t.Fatalf("never written: Wait = %v, want 0", w)
	}
	p.Wrote(a)
	clk.SetTime(clk.Now().Add(300 * time.Millisecond))
	if w := p.Wait(a); w != 700*time.Millisecond {
		t.Errorf("300ms after a write: Wait = %v, want 700ms", w)
	}
	if w := p.Wait(b); w != 0 {
		t.Errorf("another object: Wait = %v, want 0", w)
	}
	clk.SetTime(clk.Now().Add(700 * time.Millisecond))
	if w := p.Wait(a); w != 0 {
		t.Errorf("an interval after the write: Wait = %v, want 0", w)
	}
}

func TestWroteForgetsOldWrites(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	p := New(time.Second, clk)
	for i := range 100 {
		p.Wrote(types.NamespacedName{Namespace: "ns", Name: string(rune('a'+i%26)) + string(rune('0'+i/26))})
	}
	if p.Len() != 100 {
		t.Fatalf("Len = %d, want 100", p.Len())
	}
	clk.SetTime(clk.Now().Add(10 * time.Second))
	fresh := types.NamespacedName{Namespace: "ns", Name: "fresh"}
	p.Wrote(fresh)
	if p.Len() != 1 {
		t.Errorf("after 10 intervals Len = %d, want 1 (only the fresh write)", p.Len())
	}
	if w := p.Wait(fresh); w != time.Second {
		t.Errorf("fresh write: Wait = %v, want 1s", w)
	}
}
