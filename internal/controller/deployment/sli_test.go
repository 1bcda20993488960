package deployment_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/deployment"
	"github.com/kcm/kcm/internal/convergence"
	"github.com/kcm/kcm/internal/testenv"
)

// The convergence SLIs (issue 37) through the real API server: the clock of a new Deployment
// starts at the shared informer's Add and stops when its status shows it complete.
var _ = Describe("deployment-controller's convergence SLIs", func() {
	ctx := context.Background()
	series := map[string]string{"controller": deployment.ControllerName}
	observed := func() (uint64, float64) {
		h := testenv.Histogram("kcm_convergence_duration_seconds", series)
		return h.GetSampleCount(), h.GetSampleSum()
	}

	It("observes the time from a new Deployment, and from a new generation, to its rollout complete", func() {
		tracker := convergence.Lookup(deployment.ControllerName)
		Expect(tracker).NotTo(BeNil(), "the deployment-controller descriptor names its rule")
		// From then on a new object's clock starts at its Add, not at the leader's initial list.
		Eventually(tracker.Listening).Should(BeTrue())
		ns := env.Namespace(ctx, "sli")
		// Pods become ready a second after the kubelet first sees them: the rollout takes at
		// least that long.
		kubelet{ReadyAfter: time.Second}.start(ctx, ns)
		count, sum := observed()

		created := time.Now()
		Expect(env.Client.Create(ctx, newDeployment(ns, "web", 2))).To(Succeed())
		key := ns + "/web"
		Eventually(func(g Gomega) {
			c := tracker.Convergence(key)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Converged).To(BeFalse())
			g.Expect(c.Since).NotTo(BeNil())
		}).Should(Succeed(), "a new Deployment is not converged until its pods are ready")
		Expect(testenv.Sample("kcm_objects_not_converged", series)).To(BeNumerically(">=", 1))
		expectRolledOut(ctx, ns, "web")
		outside := time.Since(created).Seconds()

		var last float64
		Eventually(func(g Gomega) {
			c := tracker.Convergence(key)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Converged).To(BeTrue())
			g.Expect(c.Since).To(BeNil())
			g.Expect(c.Rule).To(Equal(deployment.Convergence.Description))
			g.Expect(c.LastSeconds).NotTo(BeNil())
			last = *c.LastSeconds
		}).Should(Succeed())
		GinkgoWriter.Printf("create to complete: %.3fs by the clock, %.3fs seen from outside\n", last, outside)
		Expect(last).To(BeNumerically(">=", 1), "the pods were ready a second after they were made")
		Expect(last).To(BeNumerically("<=", outside), "the clock starts at the Add, after the create, and stops at the event showing it complete")
		gotCount, gotSum := observed()
		Expect(gotCount).To(Equal(count+1), "one Deployment converged once")
		Expect(gotSum - sum).To(BeNumerically("~", last, 1e-6))

		// A new generation restarts the clock: one more observation, at least a second long.
		updateDeployment(ctx, ns, "web", setReplicas(3))
		expectRolledOut(ctx, ns, "web")
		Eventually(func() uint64 { n, _ := observed(); return n }).Should(Equal(count + 2))
		_, gotSum2 := observed()
		Expect(gotSum2 - gotSum).To(BeNumerically(">=", 1))
		Expect(tracker.Convergence(key).LastSeconds).To(HaveValue(BeNumerically("~", gotSum2-gotSum, 1e-6)))
	})
})
