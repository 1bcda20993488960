package staleness

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestView(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	rs := schema.GroupResource{Group: "apps", Resource: "replicasets"}
	podRV, rsRV := "10", "10"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	skips := metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: "test", Name: "stale_sync_skips_total"}, []string{"group", "resource"})
	registry := metrics.NewKubeRegistry()
	registry.MustRegister(skips)
	g := NewGuard(skips, map[schema.GroupResource]func() string{
		pods: func() string { return podRV },
		rs:   func() string { return rsRV },
	})
	g.Clock = clk
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}

	if v := g.View("ns/web"); v != nil {
		t.Fatalf("no write: %+v, want nil", v)
	}
	g.WroteAt(owner, "u1", rs, "12")
	clk.Step(time.Second)
	g.WroteAt(owner, "u1", pods, "20")
	// Both behind: the first in Stale's order (the core group's pods before apps').
	v := g.View("ns/web")
	if v == nil || v.Resource != "pods" || v.Written != "20" || v.Seen != "10" || !v.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("view = %+v, want pods written 20, seen 10, since %s", v, t0.Add(time.Second))
	}
	podRV = "20"
	if v := g.View("ns/web"); v == nil || v.Resource != "replicasets.apps" || v.Written != "12" || v.Seen != "10" || !v.Since.Equal(t0) {
		t.Fatalf("view = %+v, want replicasets.apps written 12, seen 10, since %s", v, t0)
	}
	if n := counted(t, registry, "pods") + counted(t, registry, "replicasets"); n != 0 {
		t.Errorf("the view counted %v skips, want none", n)
	}
	clk.Step(DefaultMaxWait)
	if v := g.View("ns/web"); v != nil {
		t.Errorf("past MaxWait: %+v, want nil (the write no longer holds syncs back)", v)
	}
	var none *Guard
	if v := none.View("ns/web"); v != nil {
		t.Errorf("nil Guard: %+v", v)
	}
}
