package rootcapublisher_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcm/kcm/internal/testenv"
)

// syncs reads upstream's root_ca_cert_publisher_sync_total and sync_duration_seconds from the
// legacy registry /metrics serves, by their only label, code: the counter's values and the
// histogram's sample counts, which must agree.
func syncs(g Gomega) map[string]float64 {
	byCode := func(name string, t dto.MetricType, check func(testenv.Series)) map[string]float64 {
		f, out := testenv.ReadFamily(name), map[string]float64{}
		for _, s := range f.Series {
			g.Expect(f.Type).To(Equal(t), name)
			g.Expect(s.Labels).To(HaveLen(1))
			g.Expect(s.Labels).To(HaveKey("code"))
			check(s)
			out[s.Labels["code"]] = s.Value
		}
		return out
	}
	total := byCode("root_ca_cert_publisher_sync_total", dto.MetricType_COUNTER, func(testenv.Series) {})
	observed := byCode("root_ca_cert_publisher_sync_duration_seconds", dto.MetricType_HISTOGRAM, func(s testenv.Series) {
		// Upstream's buckets: 1ms doubling 15 times.
		g.Expect(s.Histogram.GetBucket()).To(HaveLen(15))
		g.Expect(s.Histogram.GetBucket()[0].GetUpperBound()).To(Equal(0.001))
	})
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
