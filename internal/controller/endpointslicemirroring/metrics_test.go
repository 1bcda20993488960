package endpointslicemirroring_test

import (
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/component-base/metrics/legacyregistry"
)

var _ = Describe("endpointslice-mirroring-controller's metrics", func() {
	It("records syncs, slice changes, addresses skipped (none) and the desired endpoints in upstream's endpoint_slice_mirroring_controller_* families", func(ctx SpecContext) {
		const prefix = "endpoint_slice_mirroring_controller_"
		creates := sample(prefix+"changes", map[string]string{"operation": "create"})
		skipped := sample(prefix+"addresses_skipped_per_sync", nil)
		added := sample(prefix+"endpoints_added_per_sync", nil)
		syncs := sample(prefix+"endpoints_sync_duration", nil)
		desired := sample(prefix+"endpoints_desired", nil)

		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "counted", nil)
		ep := createEndpoints(ctx, ns, "counted", nil,
			corev1.EndpointSubset{Addresses: addresses("10.9.0.1", "10.9.0.2"), Ports: webPort})
		Eventually(func(g Gomega) {
			g.Expect(mirrored(ctx, g, ns, "counted")).To(HaveKey(discoveryv1.AddressTypeIPv4))
		}).Should(Succeed())

		Eventually(func() float64 { return sample(prefix+"changes", map[string]string{"operation": "create"}) }).
			Should(BeNumerically(">", creates))
		Eventually(func() float64 { return sample(prefix+"endpoints_desired", nil) }).Should(Equal(desired + 2))
		Expect(sample(prefix+"addresses_skipped_per_sync", nil)).To(BeNumerically(">", skipped))
		Expect(sample(prefix+"endpoints_added_per_sync", nil)).To(BeNumerically(">", added))
		Expect(sample(prefix+"endpoints_sync_duration", nil)).To(BeNumerically(">", syncs))
		Expect(labelNames(prefix + "changes")).To(Equal([]string{"operation"}))

		By("deleting the Endpoints: its endpoints leave the gauge")
		Expect(env.Client.Delete(ctx, ep)).To(Succeed())
		Eventually(func() float64 { return sample(prefix+"endpoints_desired", nil) }).Should(Equal(desired))
	})
})

// sample reads one series from the registry kcm's /metrics serves: a counter's or gauge's
// value, a histogram's sample count; labels must match exactly (nil: none). 0 when absent.
func sample(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// labelNames are the sorted label names of the family's first series (nil: no series).
func labelNames(name string) []string {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name || len(f.GetMetric()) == 0 {
			continue
		}
		var out []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			out = append(out, l.GetName())
		}
		sort.Strings(out)
		return out
	}
	return nil
}
