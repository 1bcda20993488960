//go:build linux

package process_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Controllers", func() {
	It("by default, give a new namespace its default ServiceAccount and kube-root-ca.crt, and name once those not built yet", func() {
		p := startKCM("kcm", "--leader-elect=false")
		// Both controllers run: the namespace below is seen by their watches.
		Eventually(workersStarted(p, "serviceaccount-controller")).WithTimeout(30 * time.Second).Should(Equal(1))
		Eventually(workersStarted(p, "root-ca-certificate-publisher-controller")).WithTimeout(30 * time.Second).Should(Equal(1))

		ns := newNamespace(env.Client)
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(rootCAData(env.Client, ns)).WithTimeout(30 * time.Second).Should(Equal(string(env.Config.CAData)))

		// Exactly the registry's on-by-default controllers without a Setup (e.g. the
		// deployment-controller while it is not built), on one line.
		expected := notBuiltAmong()
		notBuilt := p.Lines("does not implement yet")
		if len(expected) == 0 {
			Expect(notBuilt).To(BeEmpty())
		} else {
			Expect(notBuilt).To(HaveLen(1), "one line names the controllers kcm has not built")
			Expect(logField(notBuilt[0], "controllers")).To(ConsistOf(expected))
		}

		// Without kubeadm's flags, what kubeadm's cluster needs and does not get is named on
		// one line, each with the flag that would turn it on.
		Eventually(p.Count("Controllers set up")).WithTimeout(30 * time.Second).Should(Equal(1))
		off := p.Lines("Controllers that do not run for want of a flag")
		Expect(off).To(HaveLen(1), "one line names the controllers off for want of a flag")
		Expect(logField(off[0], "controllers")).To(ConsistOf(
			"bootstrap-signer-controller (--controllers=*,bootstrapsigner)",
			"certificatesigningrequest-signing-controller (--cluster-signing-cert-file and --cluster-signing-key-file)",
			"node-ipam-controller (--allocate-node-cidrs=true and --cluster-cidr)",
			"serviceaccount-token-controller (--service-account-private-key-file)",
			"token-cleaner-controller (--controllers=*,tokencleaner)",
		))
		Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())
	})

	// As upstream, the first entry naming a controller decides, and "*" decides only for the
	// controllers no entry names.
	DescribeTable("--controllers turns the serviceaccount-controller off",
		func(controllers string, rootCAPublisherRuns bool) {
			p := startKCM("kcm", "--leader-elect=false", "--controllers="+controllers)
			Eventually(p.Count("Controllers set up")).WithTimeout(30 * time.Second).Should(Equal(1))
			setUp := logField(p.Lines("Controllers set up")[0], "controllers")
			Expect(setUp).NotTo(ContainElement("serviceaccount-controller"))

			if !rootCAPublisherRuns {
				Expect(setUp).To(BeEmpty(), "no controller is set up")
				Expect(p.Lines("does not implement yet")).To(BeEmpty(), "no controller is enabled at all")
				ns := newNamespace(env.Client)
				Consistently(func() []error {
					_, cmErr := rootCAData(env.Client, ns)()
					return []error{getSA(env.Client, ns, defaultSA)(), cmErr}
				}).WithTimeout(5*time.Second).Should(HaveEach(beNotFound()), "nothing runs without *")
				Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())
				return
			}

			Expect(setUp).To(ContainElement("root-ca-certificate-publisher-controller"))
			Eventually(workersStarted(p, "root-ca-certificate-publisher-controller")).WithTimeout(30 * time.Second).Should(Equal(1))
			ns := newNamespace(env.Client)
			Eventually(rootCAData(env.Client, ns)).WithTimeout(30 * time.Second).Should(Equal(string(env.Config.CAData)))
			Consistently(getSA(env.Client, ns, defaultSA)).WithTimeout(4*time.Second).Should(beNotFound(),
				"the serviceaccount-controller is off, yet the default ServiceAccount appeared")
			Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())
		},
		Entry("by its name after *", "*,-serviceaccount-controller", true),
		Entry("by its alias before *", "-serviceaccount,*", true),
		Entry("alone, which enables nothing else either", "-serviceaccount-controller", false),
	)
})
