//go:build linux

package process_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// healthPaths opens /healthz and its per-check paths to anonymous clients, as the specs
// below read them without credentials.
const healthPaths = "--authorization-always-allow-paths=/healthz,/healthz/*"

var _ = Describe("/healthz", func() {
	It("lists upstream's checks: leaderElection, then every controller kcm runs, each also at /healthz/<name>", func() {
		port := freePort()
		p := startKCM("kcm", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), healthPaths)
		get := healthGetter(port)
		Eventually(p.Count("Controllers set up")).WithTimeout(30 * time.Second).Should(Equal(1))
		running := logField(p.Lines("Controllers set up")[0], "controllers")
		Expect(running).To(ContainElements("serviceaccount-controller", "root-ca-certificate-publisher-controller"))
		// Those off for want of a flag have no check, as upstream's skipped controllers: the
		// startup line names them.
		off := p.Lines("Controllers that do not run for want of a flag")
		Expect(off).To(HaveLen(1))
		Expect(off[0]).To(And(ContainSubstring("certificatesigningrequest-signing-controller"), ContainSubstring("node-ipam-controller")))
		Expect(running).NotTo(ContainElement("certificatesigningrequest-signing-controller"))
		Expect(running).NotTo(ContainElement("node-ipam-controller"))

		want := "200 [+]leaderElection ok\n"
		for _, name := range running {
			want += "[+]" + name + " ok\n"
		}
		want += "healthz check passed\n"
		Eventually(get("/healthz?verbose")).WithTimeout(30*time.Second).Should(Equal(want), "kcm: %s", p.State())
		Expect(get("/healthz")()).To(Equal("200 ok"))
		Expect(get("/healthz/leaderElection")()).To(Equal("200 ok"))
		for _, name := range running {
			Expect(get("/healthz/"+name)()).To(Equal("200 ok"), name)
		}
		// Upstream has no ping check once it has others, and no /readyz or /livez.
		Expect(get("/healthz/ping")()).To(HavePrefix("404 "))
	})

	It("has no leaderElection check without --leader-elect, as upstream", func() {
		port := freePort()
		p := startKCM("kcm", "--leader-elect=false", "--controllers=serviceaccount-controller",
			"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), healthPaths)
		Eventually(healthGetter(port)("/healthz?verbose")).WithTimeout(30*time.Second).
			Should(Equal("200 [+]serviceaccount-controller ok\nhealthz check passed\n"), "kcm: %s", p.State())
	})

	// With controller-runtime as with client-go's elector upstream, a leader that cannot renew
	// stops leading within the renew deadline and the process exits: the watchdog (which fails
	// only when the lease was not renewed for the lease duration plus 20 s, i.e. an elector
	// that can no longer give up; internal/manager's TestHealthz wedges one) must not fail
	// before that, nor count a standby as unhealthy. This spec takes the Lease away through the
	// API and reads /healthz until kcm exits.
	It("stays healthy when another holder takes the Lease, and kcm exits with leadership lost within the renew deadline", func() {
		const (
			leaseDuration = 4 * time.Second
			renewDeadline = 3 * time.Second
			retryPeriod   = 500 * time.Millisecond
		)
		port := freePort()
		lease := uniqueLeaseName()
		p := startKCM("kcm", "--controllers=serviceaccount-controller", "--leader-elect-resource-name="+lease,
			fmt.Sprintf("--leader-elect-lease-duration=%s", leaseDuration),
			fmt.Sprintf("--leader-elect-renew-deadline=%s", renewDeadline),
			fmt.Sprintf("--leader-elect-retry-period=%s", retryPeriod),
			"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), healthPaths)
		get := healthGetter(port)
		Eventually(p.Count("Successfully acquired lease")).WithTimeout(30 * time.Second).Should(Equal(1))
		Eventually(get("/healthz/leaderElection")).WithTimeout(30 * time.Second).Should(Equal("200 ok"))

		By("another holder takes the Lease, renewed now for an hour")
		l, err := getLease(env.Client, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).NotTo(BeNil())
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity = ptr.To("intruder")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		Expect(env.Client.Update(context.Background(), l)).To(Succeed())
		takenAt := time.Now()

		// Ask /healthz until kcm exits, keeping every answer.
		var answers []string
		Eventually(func() bool {
			if a, err := get("/healthz?verbose")(); err == nil {
				answers = append(answers, a)
			}
			return p.Exited()
		}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "kcm still runs 30 s after losing its Lease")
		code, exited := p.Wait(time.Second)
		Expect(exited).To(BeTrue(), "kcm still runs 30 s after losing its Lease")
		exitAfter := p.exitedAt.Sub(takenAt)
		AddReportEntry("exit after the Lease was taken", exitAfter.Round(time.Millisecond).String())
		Expect(code).To(Equal(1), "exit code, as upstream's FlushAndExit(1) on leaderelection lost")
		Expect(p.Lines("leader election lost")).NotTo(BeEmpty())
		// client-go's renew loop gives up renewDeadline after its first failed attempt, which
		// starts at most one (jittered) retry period after the takeover.
		Expect(exitAfter).To(BeNumerically("<", renewDeadline+2*retryPeriod+5*time.Second))

		Expect(answers).NotTo(BeEmpty(), "no /healthz answer between the takeover and the exit")
		Expect(answers).To(HaveEach(And(HavePrefix("200 "), ContainSubstring("[+]leaderElection ok\n"))))
		Expect(holder(env.Client, lease)()).To(Equal("intruder"), "kcm took the Lease back")
	})
})

// healthGetter returns a function making a GET of a path on kcm's secure port (anonymous,
// its certificate self-signed), for use in Eventually; it answers "<status> <body>".
func healthGetter(port int) func(path string) func() (string, error) {
	hc := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed
	}
	DeferCleanup(hc.CloseIdleConnections)
	return func(path string) func() (string, error) {
		return func() (string, error) {
			resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return fmt.Sprintf("%d %s", resp.StatusCode, body), err
		}
	}
}
