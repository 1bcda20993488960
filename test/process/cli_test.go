//go:build linux

package process_test

import (
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The command line", func() {
	It("rejects an unknown controller at once, naming it", func() {
		p := startKCM("kcm", "--controllers=bogus")
		code, exited := p.Wait(10 * time.Second)
		Expect(exited).To(BeTrue(), "kcm --controllers=bogus still runs after 10s; output:\n%s", p.Output())
		Expect(code).NotTo(BeZero(), "kcm --controllers=bogus exited 0; output:\n%s", p.Output())
		Expect(p.Output()).To(And(ContainSubstring(`bogus`), MatchRegexp(`(?i)unknown`)))
	})

	It("prints its flags for --help and exits 0", func() {
		p := startKCM("kcm", "--help")
		code, exited := p.Wait(10 * time.Second)
		Expect(exited).To(BeTrue(), "kcm --help still runs after 10s")
		Expect(code).To(BeZero(), "kcm --help; output:\n%s", p.Output())
		for _, flag := range []string{"controllers", "kube-api-qps", "leader-elect-lease-duration", "concurrent-deployment-syncs"} {
			// pflag's usage lines: indentation, the flag, its type.
			Expect(p.Output()).To(MatchRegexp(`(?m)^\s+--`+regexp.QuoteMeta(flag)+`\s`), "--%s is not listed", flag)
		}
	})
})
