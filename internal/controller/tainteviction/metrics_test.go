package tainteviction_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// podDeletions reads upstream's taint_eviction_controller_pod_deletions_total and
// pod_deletion_duration_seconds from the legacy registry /metrics serves: both without labels.
func podDeletions(g Gomega) (total float64, latency *dto.Histogram) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		switch f.GetName() {
		case "taint_eviction_controller_pod_deletions_total":
			g.Expect(f.GetType()).To(Equal(dto.MetricType_COUNTER))
			g.Expect(f.GetMetric()).To(HaveLen(1))
			g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
			total = f.GetMetric()[0].GetCounter().GetValue()
		case "taint_eviction_controller_pod_deletion_duration_seconds":
			g.Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
			g.Expect(f.GetMetric()).To(HaveLen(1))
			g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
			latency = f.GetMetric()[0].GetHistogram()
			// Upstream's buckets: 5ms to 4m.
			g.Expect(latency.GetBucket()).To(HaveLen(12))
			g.Expect(latency.GetBucket()[0].GetUpperBound()).To(Equal(0.005))
			g.Expect(latency.GetBucket()[11].GetUpperBound()).To(Equal(240.0))
		}
	}
	g.Expect(latency).NotTo(BeNil(), "taint_eviction_controller_pod_deletion_duration_seconds is not registered")
	return total, latency
}
