package staleness

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDecideWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := Write{RV: "100", Base: "90", At: t0}
	for _, tc := range []struct {
		name  string
		w     Write
		read  string
		after time.Duration
		want  Verdict
	}{
		{"cache behind the write", w, "95", 0, Behind},
		{"cache at the write", w, "100", 0, Caught},
		{"cache past the write", w, "150", 0, Caught},
		{"cache behind, still within the wait", w, "95", DefaultMaxWait - time.Millisecond, Behind},
		{"cache behind past the wait: never wedges (an API server restart)", w, "95", DefaultMaxWait, Caught},
		{"cache went back since the write (relisted from a restored etcd)", w, "50", 0, Caught},
		{"no base recorded, cache behind", Write{RV: "100", At: t0}, "50", 0, Behind},
		{"the cache does not say (AtomicFIFO off)", w, "", 0, Caught},
		{"versions that do not compare", w, "x1", 0, Caught},
		{"a write without a version", Write{At: t0}, "95", 0, Caught},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecideWrite(tc.w, tc.read, t0.Add(tc.after), DefaultMaxWait); got != tc.want {
				t.Errorf("DecideWrite(%+v, %q, +%v) = %v, want %v", tc.w, tc.read, tc.after, got, tc.want)
			}
		})
	}
}

func TestGuard(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	rs := schema.GroupResource{Group: "apps", Resource: "replicasets"}
	podRV, rsRV := "10", "10"
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	skips := metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: "test", Name: "stale_sync_skips_total"}, []string{"group", "resource"})
	registry := metrics.NewKubeRegistry()
	registry.MustRegister(skips)
	g := NewGuard(skips, map[schema.GroupResource]func() string{
		pods: func() string { return podRV },
		rs:   func() string { return rsRV },
	})
	g.Clock = clk
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}

	if stale, _ := g.Stale(owner); stale {
		t.Fatal("no write: stale")
	}
	g.WroteAt(owner, "u1", pods, "20")
	g.WroteAt(owner, "u1", pods, "15") // an older write does not lower the mark
	g.WroteAt(owner, "u1", rs, "12")
	if stale, wait := g.Stale(owner); !stale || wait != DefaultMaxWait {
		t.Fatalf("caches at 10 after writes at 20 and 12: stale %v wait %v, want true %v", stale, wait, DefaultMaxWait)
	}
	podRV = "18"
	rsRV = "12"
	if stale, _ := g.Stale(owner); !stale {
		t.Fatal("pods at 18 after a write at 20: not stale")
	}
	podRV = "20"
	if stale, _ := g.Stale(owner); stale {
		t.Fatal("caught up: stale")
	}
	if got := counted(t, registry, "pods"); got != 2 {
		t.Errorf("test_stale_sync_skips_total{resource=pods} = %v, want 2", got)
	}

	// A write the cache never reaches (it relisted at an older version after an API server
	// restart) holds syncs back for MaxWait at most.
	g.WroteAt(owner, "u1", pods, "30")
	clk.Step(DefaultMaxWait / 2)
	if stale, wait := g.Stale(owner); !stale || wait != DefaultMaxWait/2 {
		t.Fatalf("half way: stale %v wait %v", stale, wait)
	}
	clk.Step(DefaultMaxWait / 2)
	if stale, _ := g.Stale(owner); stale {
		t.Fatal("past MaxWait: stale")
	}
	// A new owner of the same name starts clean; Clear forgets; a nil Guard (gate off) never skips.
	g.WroteAt(owner, "u1", pods, "40")
	g.WroteAt(owner, "u2", rs, "11")
	if stale, _ := g.Stale(owner); stale {
		t.Fatal("the new owner's write is in the cache, the old owner's pod write was forgotten: stale")
	}
	g.WroteAt(owner, "u2", pods, "40")
	g.Clear(owner)
	if stale, _ := g.Stale(owner); stale {
		t.Fatal("cleared: stale")
	}
	var off *Guard
	off.WroteAt(owner, "u", pods, "99")
	if stale, _ := off.Stale(owner); stale {
		t.Fatal("nil guard: stale")
	}
}

// counted is the counter's value for a resource, as /metrics would show it.
func counted(t *testing.T, registry metrics.KubeRegistry, resource string) float64 {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "test_stale_sync_skips_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" && l.GetValue() == resource {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestSkip(t *testing.T) {
	ctx := context.Background()
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	var off *Guard
	if res, skip := off.Skip(ctx, owner); skip || res.RequeueAfter != 0 {
		t.Fatalf("no guard (gate off): skip %v after %v", skip, res.RequeueAfter)
	}
	pods := schema.GroupResource{Resource: "pods"}
	podRV := "10"
	skips := metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: "skip", Name: "stale_sync_skips_total"}, []string{"group", "resource"})
	metrics.NewKubeRegistry().MustRegister(skips)
	g := NewGuard(skips, map[schema.GroupResource]func() string{pods: func() string { return podRV }})
	g.Clock = clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if _, skip := g.Skip(ctx, owner); skip {
		t.Fatal("no write: skipped")
	}
	g.WroteAt(owner, "u1", pods, "20")
	// Behind for DefaultMaxWait (2s) still: run again at Recheck, not after the whole wait.
	if res, skip := g.Skip(ctx, owner); !skip || res.RequeueAfter != Recheck {
		t.Fatalf("cache behind the write: skip %v after %v, want true %v", skip, res.RequeueAfter, Recheck)
	}
	podRV = "20"
	if _, skip := g.Skip(ctx, owner); skip {
		t.Fatal("cache caught up: skipped")
	}
}
