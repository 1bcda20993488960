package cronjob_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// skewHistogram reads upstream's cronjob_controller_job_creation_skew_duration_seconds from
// the legacy registry /metrics serves: a histogram without labels.
func skewHistogram() *dto.Histogram {
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "cronjob_controller_job_creation_skew_duration_seconds" {
			continue
		}
		Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
		Expect(f.GetMetric()).To(HaveLen(1))
		Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
		h := f.GetMetric()[0].GetHistogram()
		// Upstream's buckets: 1s doubling 10 times.
		Expect(h.GetBucket()).To(HaveLen(10))
		Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(1.0))
		return h
	}
	Fail("cronjob_controller_job_creation_skew_duration_seconds is not registered")
	return nil
}
