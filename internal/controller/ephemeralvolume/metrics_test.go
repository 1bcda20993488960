package ephemeralvolume_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// creates reads upstream's ephemeral_volume_controller_create_total and
// create_failures_total from the legacy registry /metrics serves: counters without labels.
func creates(g Gomega) (attempts, failures float64) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	found := map[string]float64{}
	for _, f := range families {
		switch f.GetName() {
		case "ephemeral_volume_controller_create_total", "ephemeral_volume_controller_create_failures_total":
			g.Expect(f.GetType()).To(Equal(dto.MetricType_COUNTER))
			g.Expect(f.GetMetric()).To(HaveLen(1))
			g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
			found[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	g.Expect(found).To(HaveLen(2), "both families are registered")
	return found["ephemeral_volume_controller_create_total"], found["ephemeral_volume_controller_create_failures_total"]
}
