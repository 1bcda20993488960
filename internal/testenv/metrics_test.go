package testenv_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
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

	It("read a whole family: its type and each series' labels and value", func() {
		c := metrics.NewCounterVec(&metrics.CounterOpts{Name: "testenv_probe_total", Help: "A probe.",
			StabilityLevel: metrics.ALPHA}, []string{"zone"})
		legacyregistry.MustRegister(c)
		Expect(testenv.ReadFamily("testenv_probe_total").Series).To(BeEmpty(), "no series before an increment")
		c.WithLabelValues("a").Add(2)
		c.WithLabelValues("b").Inc()
		f := testenv.ReadFamily("testenv_probe_total")
		Expect(f.Type).To(Equal(dto.MetricType_COUNTER))
		Expect(f.Series).To(ConsistOf(
			testenv.Series{Labels: map[string]string{"zone": "a"}, Value: 2},
			testenv.Series{Labels: map[string]string{"zone": "b"}, Value: 1},
		))
		Expect(testenv.ReadFamily("testenv_absent_total")).To(Equal(testenv.Family{}))
	})
})
