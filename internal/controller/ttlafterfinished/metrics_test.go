package ttlafterfinished_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcm/kcm/internal/testenv"
)

// deletionHistogram reads upstream's ttl_after_finished_controller_job_deletion_duration_seconds
// from the legacy registry /metrics serves: a histogram without labels.
func deletionHistogram() *dto.Histogram {
	GinkgoHelper()
	h := testenv.Histogram("ttl_after_finished_controller_job_deletion_duration_seconds", nil)
	Expect(h).NotTo(BeNil(), "ttl_after_finished_controller_job_deletion_duration_seconds is not registered")
	// Upstream's buckets: 100ms doubling 14 times.
	Expect(h.GetBucket()).To(HaveLen(14))
	Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(0.1))
	return h
}
