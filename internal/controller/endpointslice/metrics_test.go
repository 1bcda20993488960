package endpointslice_test

import (
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/metrics/legacyregistry"
)

var _ = Describe("endpointslice-controller's metrics", func() {
	It("counts syncs, slice changes and endpoints added in upstream's endpoint_slice_controller_* families", func(ctx SpecContext) {
		syncs := sample("endpoint_slice_controller_syncs", map[string]string{"result": "success"})
		creates := sample("endpoint_slice_controller_changes", map[string]string{"operation": "create"})
		added := sample("endpoint_slice_controller_endpoints_added_per_sync", nil)

		ns := env.Namespace(ctx, "eps")
		Expect(env.Client.Create(ctx, service(ns, "counted", "counted", intstr.FromInt32(80)))).To(Succeed())
		createPod(ctx, ns, "p", "counted", podOpts{node: nodeA, ips: []string{"10.7.0.1"}, ready: true})
		Eventually(func(g Gomega) []discoveryv1.EndpointSlice {
			return slicesOf(ctx, g, ns, "counted")
		}).Should(HaveLen(1))

		Eventually(func() float64 {
			return sample("endpoint_slice_controller_syncs", map[string]string{"result": "success"})
		}).Should(BeNumerically(">", syncs))
		Eventually(func() float64 {
			return sample("endpoint_slice_controller_changes", map[string]string{"operation": "create"})
		}).Should(BeNumerically(">", creates))
		Eventually(func() float64 {
			return sample("endpoint_slice_controller_endpoints_added_per_sync", nil)
		}).Should(BeNumerically(">", added), "one observation per sync")

		Expect(labelNames("endpoint_slice_controller_syncs")).To(Equal([]string{"result"}))
		Expect(labelNames("endpoint_slice_controller_changes")).To(Equal([]string{"operation"}))
		Expect(labelNames("endpoint_slice_controller_endpointslices_changed_per_sync")).
			To(Equal([]string{"topology", "traffic_distribution"}))
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
