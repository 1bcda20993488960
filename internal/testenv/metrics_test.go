package testenv_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("the legacy registry readers", func() {
	It("read a histogram series' count, sum and buckets by its exact labels", func() {
		h := metrics.NewHistogramVec(&metrics.HistogramOpts{Name: "testenv_probe_seconds", Help: "A probe.",
			Buckets: []float64{1, 2, 4}, StabilityLevel: metrics.ALPHA}, []string{"code"})
		legacyregistry.MustRegister(h)
		Expect(testenv.Histogram("testenv_probe_seconds", map[string]string{"code": "200"})).To(BeNil(), "no series before an observation")

		h.WithLabelValues("200").Observe(0.5)
		h.WithLabelValues("200").Observe(3)
		h.WithLabelValues("500").Observe(8)
		got := testenv.Histogram("testenv_probe_seconds", map[string]string{"code": "200"})
		Expect(got).NotTo(BeNil())
		Expect(got.GetSampleCount()).To(BeEquivalentTo(2))
		Expect(got.GetSampleSum()).To(Equal(3.5))
		Expect(got.GetBucket()).To(HaveLen(3))
		Expect(testenv.Sample("testenv_probe_seconds", map[string]string{"code": "500"})).To(Equal(1.0), "Sample counts a histogram's samples")
		Expect(testenv.Histogram("testenv_probe_seconds", nil)).To(BeNil(), "labels match exactly")
		Expect(testenv.Histogram("testenv_absent_seconds", nil)).To(BeNil())
	})
})
