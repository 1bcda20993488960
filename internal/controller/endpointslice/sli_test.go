package endpointslice_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcm/kcm/internal/controller/endpointslice"
	"github.com/kcm/kcm/internal/convergence"
	"github.com/kcm/kcm/internal/testenv"
)

// The convergence SLIs (issue 37) through the real API server: a pod that becomes ready, then
// not ready, starts the clock of the Service selecting it, which stops when its slices show it so.
var _ = Describe("endpointslice-controller's convergence SLIs", func() {
	series := map[string]string{"controller": endpointslice.ControllerName}
	count := func() uint64 {
		return testenv.Histogram("kcm_convergence_duration_seconds", series).GetSampleCount()
	}

	It("observes the time from a pod's readiness change to the Service's slices showing it", func(ctx SpecContext) {
		tracker := convergence.Lookup(endpointslice.ControllerName)
		Expect(tracker).NotTo(BeNil(), "the endpointslice-controller descriptor names its rule")
		Eventually(tracker.Listening).Should(BeTrue())
		ns := env.Namespace(ctx, "sli")
		Expect(env.Client.Create(ctx, service(ns, "web", "web", intstr.FromInt32(80)))).To(Succeed())
		key := ns + "/web"
		Eventually(func(g Gomega) { g.Expect(slicesOf(ctx, g, ns, "web")).To(HaveLen(1)) }).Should(Succeed())
		before := count()

		// A pod without an IP changes nothing the slices show: no clock.
		p := createPod(ctx, ns, "p1", "web", podOpts{node: nodeA})
		Consistently(tracker.Convergence).WithArguments(key).WithTimeout(500 * time.Millisecond).
			Should(HaveField("Since", BeNil()))

		setStatus(ctx, p, podOpts{ips: []string{"10.9.0.1"}, ready: true})
		Eventually(func(g Gomega) {
			c := tracker.Convergence(key)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Converged).To(BeTrue())
			g.Expect(c.LastSeconds).NotTo(BeNil())
			g.Expect(c.Rule).To(Equal(endpointslice.Convergence.Description))
		}).Should(Succeed())
		Expect(conditions(endpointsByPod(slicesOf(ctx, Default, ns, "web"))["p1"])).To(Equal([3]bool{true, true, false}))
		Expect(count()).To(Equal(before+1), "one change, one observation")

		setStatus(ctx, p, podOpts{ips: []string{"10.9.0.1"}, ready: false})
		Eventually(count).Should(Equal(before + 2))
		Expect(conditions(endpointsByPod(slicesOf(ctx, Default, ns, "web"))["p1"])).To(Equal([3]bool{false, false, false}))
		Expect(tracker.Convergence(key)).To(HaveField("Converged", BeTrue()))
	})
})
