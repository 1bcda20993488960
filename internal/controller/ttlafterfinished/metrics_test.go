package ttlafterfinished_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// deletionHistogram reads upstream's ttl_after_finished_controller_job_deletion_duration_seconds
// from the legacy registry /metrics serves: a histogram without labels.
func deletionHistogram() *dto.Histogram {
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "ttl_after_finished_controller_job_deletion_duration_seconds" {
			continue
		}
		Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
		Expect(f.GetMetric()).To(HaveLen(1))
		Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
		h := f.GetMetric()[0].GetHistogram()
		// Upstream's buckets: 100ms doubling 14 times.
		Expect(h.GetBucket()).To(HaveLen(14))
		Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(0.1))
		return h
	}
	Fail("ttl_after_finished_controller_job_deletion_duration_seconds is not registered")
	return nil
}
