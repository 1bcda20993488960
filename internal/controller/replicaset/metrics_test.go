package replicaset_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// ageRatios reads upstream's replicaset_controller_sorting_deletion_age_ratio from the
// registry kcm's /metrics serves (nil before anything was observed).
func ageRatios(g Gomega) *dto.Histogram {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "replicaset_controller_sorting_deletion_age_ratio" {
			continue
		}
		g.Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
		g.Expect(f.GetMetric()).To(HaveLen(1))
		g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
		return f.GetMetric()[0].GetHistogram()
	}
	return nil
}
