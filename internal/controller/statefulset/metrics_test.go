package statefulset_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// gauge reads, from the registry kcm's /metrics serves, the gauge family's series with
// exactly those label names and values (-1 when there is none).
func gauge(g Gomega, family string, labels map[string]string) float64 {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		g.Expect(f.GetType()).To(Equal(dto.MetricType_GAUGE), family)
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
