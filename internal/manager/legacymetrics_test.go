package manager

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// /metrics serves controller-runtime's registry and component-base's legacy one together; a
// family both carry (the Go collector) appears once, and what is registered afterwards
// through the combined registry lands in controller-runtime's.
func TestWithLegacyRegistry(t *testing.T) {
	own, legacy := prometheus.NewRegistry(), prometheus.NewRegistry()
	own.MustRegister(collectors.NewGoCollector())
	legacy.MustRegister(collectors.NewGoCollector())
	legacy.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubernetes_feature_enabled"}))

	combined := withLegacyRegistry(own, legacy)
	combined.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "workqueue_adds_total"}))

	families, err := combined.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, mf := range families {
		count[mf.GetName()]++
	}
	for _, name := range []string{"kubernetes_feature_enabled", "workqueue_adds_total", "go_goroutines"} {
		if count[name] != 1 {
			t.Errorf("%s served %d times, want once", name, count[name])
		}
	}
	if ownFamilies, _ := own.Gather(); len(ownFamilies) == 0 || !contains(ownFamilies, "workqueue_adds_total") {
		t.Error("a metric registered through the combined registry is not in controller-runtime's")
	}
}

func contains[T interface{ GetName() string }](families []T, name string) bool {
	for _, mf := range families {
		if mf.GetName() == name {
			return true
		}
	}
	return false
}
