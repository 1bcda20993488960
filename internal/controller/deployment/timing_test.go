package deployment_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("deployment-controller at the default client rate", Serial, func() {
	ctx := context.Background()

	It("creates a 100-replica Deployment (timed)", func() {
		// The suite runs with a raised client rate; this spec measures upstream's defaults
		// (--kube-api-qps=20, --kube-api-burst=30), then puts the suite's manager back.
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager(controllers)).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			Expect(env.StartManager(controllers, suiteFlags...)).To(Succeed())
		})
		ns := env.Namespace(ctx, "deploy")

		start := time.Now()
		Expect(env.Client.Create(ctx, newDeployment(ns, "hundred", 100))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(pods(ctx, g, ns)).To(HaveLen(100))
			g.Expect(getDeployment(ctx, g, ns, "hundred").Status.UpdatedReplicas).To(Equal(int32(100)))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		elapsed := time.Since(start)
		AddReportEntry(fmt.Sprintf("100-replica Deployment fully created in %s at the default client rate",
			elapsed.Round(10*time.Millisecond)))
	})
})
