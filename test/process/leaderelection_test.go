//go:build linux

package process_test

import (
	"fmt"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Leader election", func() {
	It("lets one of two processes lead, hands over within the lease duration when it dies, and is released on SIGTERM", func() {
		// Upstream's defaults, not given on the command line: the spec proves them.
		const (
			leaseDuration = 15 * time.Second
			retryPeriod   = 2 * time.Second
			// client-go's jitter: a candidate retries every retryPeriod to retryPeriod*(1+1.2).
			maxRetryGap = retryPeriod * 22 / 10
		)
		lease := uniqueLeaseName()
		a := startKCM("kcm-a", "--leader-elect-resource-name="+lease)
		b := startKCM("kcm-b", "--leader-elect-resource-name="+lease)
		identity := identityPattern()

		acquired := func() []string {
			var names []string
			for _, p := range []*process{a, b} {
				if p.Count("Successfully acquired lease")() > 0 {
					names = append(names, p.name)
				}
			}
			return names
		}
		Eventually(acquired).WithTimeout(30 * time.Second).Should(HaveLen(1))
		Eventually(holder(env.Client, lease)).WithTimeout(5 * time.Second).Should(MatchRegexp(identity))
		first, err := holder(env.Client, lease)()
		Expect(err).NotTo(HaveOccurred())
		l, err := getLease(env.Client, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(leaseDuration/time.Second)), "the default --leader-elect-lease-duration")
		transitions := l.Spec.LeaseTransitions

		leader, follower := a, b
		if acquired()[0] == b.name {
			leader, follower = b, a
		}
		GinkgoWriter.Printf("%s leads as %s\n", leader.name, first)

		By("only the leader's controllers act")
		ns := newNamespace(env.Client)
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(workersStarted(leader, "serviceaccount-controller")()).To(Equal(1))
		Expect(follower.Count("Starting workers")()).To(BeZero(), "the follower runs controllers")
		Expect(follower.Count("Successfully acquired lease")()).To(BeZero(), "both processes acquired the Lease")
		Expect(holder(env.Client, lease)()).To(Equal(first))

		By("SIGKILL the leader: the follower takes over once the Lease expires")
		leader.Kill()
		killedAt := time.Now()
		_, dead := leader.Wait(10 * time.Second)
		Expect(dead).To(BeTrue())
		var takeover time.Duration
		Eventually(func() (string, error) {
			h, err := holder(env.Client, lease)()
			if err == nil && h != "" && h != first {
				takeover = time.Since(killedAt)
			}
			return h, err
		}).WithTimeout(45*time.Second).WithPolling(100*time.Millisecond).Should(And(MatchRegexp(identity), Not(Equal(first))),
			"nobody took the Lease over")
		AddReportEntry("leader takeover after SIGKILL", takeover.Round(time.Millisecond).String())
		GinkgoWriter.Printf("takeover after SIGKILL of the leader: %s\n", takeover.Round(time.Millisecond))
		// The follower may take over only once the lease has expired, counted from the last
		// renewal it saw: about leaseDuration + retryPeriod after the kill. At worst it saw that
		// renewal one (jittered) retry late and retries one late again.
		Expect(takeover).To(BeNumerically(">=", leaseDuration-maxRetryGap), "taken over before the Lease expired")
		Expect(takeover).To(BeNumerically("<=", leaseDuration+2*maxRetryGap+time.Second), "taken over too late")
		Eventually(follower.Count("Successfully acquired lease")).WithTimeout(5 * time.Second).Should(Equal(1))
		l, err = getLease(env.Client, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Spec.LeaseTransitions).To(HaveValue(Equal(*transitions + 1)))
		ns = newNamespace(env.Client)
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(workersStarted(follower, "serviceaccount-controller")()).To(Equal(1))

		By("SIGTERM the new leader: it releases the Lease")
		follower.Signal(syscall.SIGTERM)
		termAt := time.Now()
		var released time.Duration
		Eventually(func() (string, error) {
			h, err := holder(env.Client, lease)()
			if err == nil && h == "" {
				released = time.Since(termAt)
			}
			return h, err
		}).WithTimeout(15*time.Second).WithPolling(50*time.Millisecond).Should(BeEmpty(), "the Lease was not released")
		AddReportEntry("Lease released after SIGTERM", released.Round(time.Millisecond).String())
		Expect(released).To(BeNumerically("<", 5*time.Second))
		code, exited := follower.Wait(30 * time.Second)
		Expect(exited).To(BeTrue(), "kcm still runs 30s after SIGTERM")
		AddReportEntry("exit code after SIGTERM", fmt.Sprint(code))
	})
})
