package endpointslicemirroring_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("endpointslice-mirroring-controller's metrics", func() {
	It("records syncs, slice changes, addresses skipped (none) and the desired endpoints in upstream's endpoint_slice_mirroring_controller_* families", func(ctx SpecContext) {
		const prefix = "endpoint_slice_mirroring_controller_"
		creates := testenv.Sample(prefix+"changes", map[string]string{"operation": "create"})
		skipped := testenv.Sample(prefix+"addresses_skipped_per_sync", nil)
		added := testenv.Sample(prefix+"endpoints_added_per_sync", nil)
		syncs := testenv.Sample(prefix+"endpoints_sync_duration", nil)
		desired := testenv.Sample(prefix+"endpoints_desired", nil)

		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "counted", nil)
		ep := createEndpoints(ctx, ns, "counted", nil,
			corev1.EndpointSubset{Addresses: addresses("10.9.0.1", "10.9.0.2"), Ports: webPort})
		Eventually(func(g Gomega) {
			g.Expect(mirrored(ctx, g, ns, "counted")).To(HaveKey(discoveryv1.AddressTypeIPv4))
		}).Should(Succeed())

		Eventually(func() float64 { return testenv.Sample(prefix+"changes", map[string]string{"operation": "create"}) }).
			Should(BeNumerically(">", creates))
		Eventually(func() float64 { return testenv.Sample(prefix+"endpoints_desired", nil) }).Should(Equal(desired + 2))
		Eventually(func() float64 { return testenv.Sample(prefix+"addresses_skipped_per_sync", nil) }).Should(BeNumerically(">", skipped))
		Eventually(func() float64 { return testenv.Sample(prefix+"endpoints_added_per_sync", nil) }).Should(BeNumerically(">", added))
		Eventually(func() float64 { return testenv.Sample(prefix+"endpoints_sync_duration", nil) }).Should(BeNumerically(">", syncs))
		Expect(testenv.LabelNames(prefix + "changes")).To(Equal([]string{"operation"}))

		By("deleting the Endpoints: its endpoints leave the gauge")
		Expect(env.Client.Delete(ctx, ep)).To(Succeed())
		Eventually(func() float64 { return testenv.Sample(prefix+"endpoints_desired", nil) }).Should(Equal(desired))
	})
})
