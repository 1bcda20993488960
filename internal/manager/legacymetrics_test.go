package manager

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// /metrics serves controller-runtime's registry and component-base's legacy one together; a
// family both carry appears once, legacy's (upstream's labels), and what is registered
// afterwards through the combined registry lands in controller-runtime's.
func TestWithLegacyRegistry(t *testing.T) {
	own, legacy := prometheus.NewRegistry(), prometheus.NewRegistry()
	own.MustRegister(collectors.NewGoCollector())
	legacy.MustRegister(collectors.NewGoCollector())
	legacy.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubernetes_feature_enabled"}))
	// The same family in both, with controller-runtime's and upstream's label sets.
	ownAdds := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total"}, []string{"name", "controller"})
	own.MustRegister(ownAdds)
	ownAdds.WithLabelValues("kcm-only", "kcm-only").Inc()
	legacyAdds := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total"}, []string{"name"})
	legacy.MustRegister(legacyAdds)
	legacyAdds.WithLabelValues("deployment").Inc()

	combined := withLegacyRegistry(own, legacy)
	combined.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total"}))

	families, err := combined.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, mf := range families {
		count[mf.GetName()]++
	}
	for _, name := range []string{"kubernetes_feature_enabled", "workqueue_adds_total", "go_goroutines", "controller_runtime_reconcile_total"} {
		if count[name] != 1 {
			t.Errorf("%s served %d times, want once", name, count[name])
		}
	}
	if got := labelNames(family(families, "workqueue_adds_total")); len(got) != 1 || got[0] != "name" {
		t.Errorf("workqueue_adds_total served with labels %v, want legacy's [name]", got)
	}
	if ownFamilies, _ := own.Gather(); family(ownFamilies, "controller_runtime_reconcile_total") == nil {
		t.Error("a metric registered through the combined registry is not in controller-runtime's")
	}
}

// kcm's /metrics registry gathers without error, each family once, and reads the Go
// runtime once: controller-runtime's own Go and process collectors are gone (legacyregistry
// has the same).
func TestMetricsRegistry(t *testing.T) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, mf := range families {
		count[mf.GetName()]++
	}
	for name, n := range count {
		if n != 1 {
			t.Errorf("%s served %d times, want once", name, n)
		}
	}
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "kubernetes_build_info"} {
		if count[name] != 1 {
			t.Errorf("%s not served (%d)", name, count[name])
		}
	}
	legacy, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if family(legacy, "go_goroutines") == nil {
		t.Error("legacyregistry has no go_goroutines")
	}
	// controller-runtime's own registry (the combined one registers into it) no longer reads
	// the runtime.
	own, err := ctrlmetrics.Registry.(registererGatherer).Registerer.(prometheus.Gatherer).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go_goroutines", "go_gc_duration_seconds", "process_start_time_seconds", "process_cpu_seconds_total"} {
		if family(own, name) != nil {
			t.Errorf("controller-runtime's registry still serves %s", name)
		}
	}
}

func family(families []*dto.MetricFamily, name string) *dto.MetricFamily {
	for _, mf := range families {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

func labelNames(mf *dto.MetricFamily) []string {
	if mf == nil || len(mf.GetMetric()) == 0 {
		return nil
	}
	var out []string
	for _, l := range mf.GetMetric()[0].GetLabel() {
		out = append(out, l.GetName())
	}
	return out
}
