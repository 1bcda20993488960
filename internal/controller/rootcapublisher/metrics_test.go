package rootcapublisher_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// syncs reads upstream's root_ca_cert_publisher_sync_total and sync_duration_seconds from the
// legacy registry /metrics serves, by their only label, code: the counter's values and the
// histogram's sample counts, which must agree.
func syncs(g Gomega) map[string]float64 {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total, observed := map[string]float64{}, map[string]float64{}
	for _, f := range families {
		switch f.GetName() {
		case "root_ca_cert_publisher_sync_total":
			g.Expect(f.GetType()).To(Equal(dto.MetricType_COUNTER))
			for _, m := range f.GetMetric() {
				g.Expect(m.GetLabel()).To(HaveLen(1))
				g.Expect(m.GetLabel()[0].GetName()).To(Equal("code"))
				total[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		case "root_ca_cert_publisher_sync_duration_seconds":
			g.Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
			for _, m := range f.GetMetric() {
				g.Expect(m.GetLabel()).To(HaveLen(1))
				g.Expect(m.GetLabel()[0].GetName()).To(Equal("code"))
				// Upstream's buckets: 1ms doubling 15 times.
				g.Expect(m.GetHistogram().GetBucket()).To(HaveLen(15))
				g.Expect(m.GetHistogram().GetBucket()[0].GetUpperBound()).To(Equal(0.001))
				observed[m.GetLabel()[0].GetValue()] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	g.Expect(total).NotTo(BeEmpty(), "root_ca_cert_publisher_sync_total has no series")
	g.Expect(observed).To(Equal(total))
	return total
}

// nonOK sums the syncs of every code but 200.
func nonOK(g Gomega) float64 {
	sum := 0.0
	for code, n := range syncs(g) {
		if code != "200" {
			sum += n
		}
	}
	return sum
}
