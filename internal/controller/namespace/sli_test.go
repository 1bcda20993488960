package namespace_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcm/kcm/internal/controller/namespace"
	"github.com/kcm/kcm/internal/convergence"
	"github.com/kcm/kcm/internal/testenv"
)

// The convergence SLIs (issue 37) through the real API server: a Namespace's clock runs from
// its deletionTimestamp seen to its delete.
var _ = Describe("namespace-controller's convergence SLIs", func() {
	ctx := context.Background()
	series := map[string]string{"controller": namespace.ControllerName}
	observed := func() (uint64, float64) {
		h := testenv.Histogram("kcm_convergence_duration_seconds", series)
		return h.GetSampleCount(), h.GetSampleSum()
	}

	It("observes the time from a Namespace's deletion to its being gone", func() {
		tracker := convergence.Lookup(namespace.ControllerName)
		Expect(tracker).NotTo(BeNil(), "the namespace-controller descriptor names its rule")
		Eventually(tracker.Listening).Should(BeTrue())
		ns := env.Namespace(ctx, "sli")
		held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{hold}}}
		create(ctx, held)
		count, sum := observed()

		deleteNamespace(ctx, ns)
		Eventually(func(g Gomega) {
			c := tracker.Convergence(ns)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Converged).To(BeFalse())
			g.Expect(c.Since).NotTo(BeNil())
		}).Should(Succeed())
		Expect(testenv.Sample("kcm_objects_not_converged", series)).To(BeNumerically(">=", 1))
		// The held ConfigMap keeps the Namespace for at least a second.
		time.Sleep(time.Second)
		release(ctx, held)
		Eventually(func() bool { return namespaceGone(ctx, ns) }).Should(BeTrue())

		Eventually(func() uint64 { n, _ := observed(); return n }).Should(Equal(count + 1))
		_, gotSum := observed()
		Expect(gotSum-sum).To(BeNumerically(">=", 1), "the Namespace was held a second")
		Expect(gotSum - sum).To(BeNumerically("<", 30))
		Expect(tracker.State(ns).Since.IsZero()).To(BeTrue(), "a Namespace gone is forgotten")
	})
})
