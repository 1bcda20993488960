package cronjob_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcm/kcm/internal/testenv"
)

// skewHistogram reads upstream's cronjob_controller_job_creation_skew_duration_seconds from
// the legacy registry /metrics serves: a histogram without labels.
func skewHistogram() *dto.Histogram {
	GinkgoHelper()
	h := testenv.Histogram("cronjob_controller_job_creation_skew_duration_seconds", nil)
	Expect(h).NotTo(BeNil(), "cronjob_controller_job_creation_skew_duration_seconds is not registered")
	// Upstream's buckets: 1s doubling 10 times.
	Expect(h.GetBucket()).To(HaveLen(10))
	Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(1.0))
	return h
}
