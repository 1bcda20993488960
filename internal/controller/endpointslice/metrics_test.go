package endpointslice_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("endpointslice-controller's metrics", func() {
	It("counts syncs, slice changes and endpoints added in upstream's endpoint_slice_controller_* families", func(ctx SpecContext) {
		syncs := testenv.Sample("endpoint_slice_controller_syncs", map[string]string{"result": "success"})
		creates := testenv.Sample("endpoint_slice_controller_changes", map[string]string{"operation": "create"})
		added := testenv.Sample("endpoint_slice_controller_endpoints_added_per_sync", nil)

		ns := env.Namespace(ctx, "eps")
		Expect(env.Client.Create(ctx, service(ns, "counted", "counted", intstr.FromInt32(80)))).To(Succeed())
		createPod(ctx, ns, "p", "counted", podOpts{node: nodeA, ips: []string{"10.7.0.1"}, ready: true})
		Eventually(func(g Gomega) []discoveryv1.EndpointSlice {
			return slicesOf(ctx, g, ns, "counted")
		}).Should(HaveLen(1))

		Eventually(func() float64 {
			return testenv.Sample("endpoint_slice_controller_syncs", map[string]string{"result": "success"})
		}).Should(BeNumerically(">", syncs))
		Eventually(func() float64 {
			return testenv.Sample("endpoint_slice_controller_changes", map[string]string{"operation": "create"})
		}).Should(BeNumerically(">", creates))
		Eventually(func() float64 {
			return testenv.Sample("endpoint_slice_controller_endpoints_added_per_sync", nil)
		}).Should(BeNumerically(">", added), "one observation per sync")

		Expect(testenv.LabelNames("endpoint_slice_controller_syncs")).To(Equal([]string{"result"}))
		Expect(testenv.LabelNames("endpoint_slice_controller_changes")).To(Equal([]string{"operation"}))
		Expect(testenv.LabelNames("endpoint_slice_controller_endpointslices_changed_per_sync")).
			To(Equal([]string{"topology", "traffic_distribution"}))
	})
})
