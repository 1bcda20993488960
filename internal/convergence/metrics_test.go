package convergence

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// series reads the family's series for controller from the registry kcm's /metrics serves.
func series(t *testing.T, family, controller string) *dto.Metric {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetName() == "controller" && m.GetLabel()[0].GetValue() == controller {
				return m
			}
		}
	}
	return nil
}

func TestFamiliesInTheLegacyRegistry(t *testing.T) {
	tracker := For(Rule{Controller: "convergence-test", Converged: done})
	if For(Rule{Controller: "convergence-test", Converged: done}) != tracker || Lookup("convergence-test") != tracker {
		t.Fatal("a controller has one tracker")
	}
	tracker.Added(object("a", 1, ""), false)
	tracker.Added(object("b", 1, ""), false)
	time.Sleep(20 * time.Millisecond)
	if n := series(t, "kcm_objects_not_converged", "convergence-test"); n.GetGauge().GetValue() != 2 {
		t.Errorf("kcm_objects_not_converged = %v, want 2", n)
	}
	if age := series(t, "kcm_oldest_not_converged_seconds", "convergence-test"); age.GetGauge().GetValue() < 0.02 {
		t.Errorf("kcm_oldest_not_converged_seconds = %v, want at least 0.02", age)
	}
	if h := series(t, "kcm_convergence_duration_seconds", "convergence-test"); h.GetHistogram().GetSampleCount() != 0 {
		t.Errorf("observed before converging: %v", h)
	}
	tracker.Updated(object("a", 1, ""), object("a", 1, "done"))
	h := series(t, "kcm_convergence_duration_seconds", "convergence-test").GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 0.02 || h.GetSampleSum() > 10 {
		t.Errorf("kcm_convergence_duration_seconds after one convergence: %v", h)
	}
	if b := h.GetBucket(); len(b) != 16 || b[0].GetUpperBound() != 0.1 || b[len(b)-1].GetUpperBound() < 3000 {
		t.Errorf("buckets %v: want 0.1 s to about an hour", b)
	}
	if n := series(t, "kcm_objects_not_converged", "convergence-test"); n.GetGauge().GetValue() != 1 {
		t.Errorf("kcm_objects_not_converged = %v, want 1", n)
	}
}
