package tainteviction_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcm/kcm/internal/testenv"
)

// podDeletions reads upstream's taint_eviction_controller_pod_deletions_total and
// pod_deletion_duration_seconds from the legacy registry /metrics serves: both without labels.
func podDeletions(g Gomega) (total float64, latency *dto.Histogram) {
	latency = testenv.Histogram("taint_eviction_controller_pod_deletion_duration_seconds", nil)
	g.Expect(latency).NotTo(BeNil(), "taint_eviction_controller_pod_deletion_duration_seconds is not registered")
	// Upstream's buckets: 5ms to 4m.
	g.Expect(latency.GetBucket()).To(HaveLen(12))
	g.Expect(latency.GetBucket()[0].GetUpperBound()).To(Equal(0.005))
	g.Expect(latency.GetBucket()[11].GetUpperBound()).To(Equal(240.0))
	return testenv.Sample("taint_eviction_controller_pod_deletions_total", nil), latency
}
