//go:build linux

package process_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("make run's local control plane (hack/localplane)", func() {
	It("runs kcm against its own etcd and kube-apiserver, and leaves nothing running after Ctrl-C", func() {
		lpBinary := filepath.Join(binDir, "localplane")
		build(lpBinary, "./hack/localplane")
		// SIGTERM, not SIGKILL, should the suite die first: localplane then stops its children.
		lp := startProcess("localplane", syscall.SIGTERM, lpBinary, "-kcm", kcmBinary, "-dir", filepath.Join(binDir, "lp"))
		var kids []procInfo
		DeferCleanup(func() {
			// Whatever happened to the spec, stop it as Ctrl-C does, then what it left.
			if !lp.Exited() {
				_ = syscall.Kill(lp.Pid(), syscall.SIGINT)
				if _, ok := lp.Wait(60 * time.Second); !ok {
					lp.Kill()
				}
			}
			for _, k := range kids {
				if alive(k) {
					_ = syscall.Kill(k.PID, syscall.SIGKILL)
				}
			}
		})

		kubeconfigLine := regexp.MustCompile(`(?m)^\s*kubeconfig:\s*(\S+)\s*$`)
		var lpKubeconfig string
		Eventually(func() string {
			if lp.Exited() {
				StopTrying("localplane exited: " + lp.State()).Now()
			}
			if m := kubeconfigLine.FindStringSubmatch(lp.Output()); m != nil {
				lpKubeconfig = m[1]
			}
			return lpKubeconfig
		}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).ShouldNot(BeEmpty())

		cfg, err := clientcmd.BuildConfigFromFlags("", lpKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Host).NotTo(Equal(env.Config.Host), "localplane runs its own API server")
		cl, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(getSA(cl, "kube-system", defaultSA)).WithTimeout(time.Minute).Should(Succeed())
		Eventually(rootCAData(cl, "kube-system")).WithTimeout(30 * time.Second).Should(Equal(string(cfg.CAData)))
		ns := newNamespace(cl)
		Eventually(getSA(cl, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(rootCAData(cl, ns)).WithTimeout(30 * time.Second).Should(Equal(string(cfg.CAData)))
		// kcm's default Lease, which no other spec touches.
		Eventually(holder(cl, "kube-controller-manager")).WithTimeout(10 * time.Second).Should(MatchRegexp(identityPattern()))

		kids = children(lp.Pid())
		var names []string
		for _, k := range kids {
			names = append(names, k.Comm)
		}
		Expect(names).To(ContainElements("etcd", "kube-apiserver", "kcm"), "localplane's children: %v", kids)
		apiServer, err := url.Parse(cfg.Host)
		Expect(err).NotTo(HaveOccurred())

		By("Ctrl-C")
		Expect(syscall.Kill(lp.Pid(), syscall.SIGINT)).To(Succeed())
		interruptedAt := time.Now()
		// When each child went, after the interrupt.
		gone := map[int]time.Duration{}
		code, exited := 0, false
		for !exited && time.Since(interruptedAt) < 60*time.Second {
			for _, k := range kids {
				if _, seen := gone[k.PID]; !seen && !alive(k) {
					gone[k.PID] = time.Since(interruptedAt)
				}
			}
			code, exited = lp.Wait(50 * time.Millisecond)
		}
		Expect(exited).To(BeTrue(), "localplane still runs 60s after SIGINT")
		shutdown := time.Since(interruptedAt)
		AddReportEntry("localplane shutdown after SIGINT", shutdown.Round(time.Millisecond).String())
		Expect(code).To(BeZero(), "localplane's exit code")
		for _, k := range kids {
			Expect(alive(k)).To(BeFalse(), "%s outlived localplane", k)
			if _, seen := gone[k.PID]; !seen {
				gone[k.PID] = shutdown
			}
			GinkgoWriter.Printf("%s gone %s after SIGINT\n", k, gone[k.PID].Round(time.Millisecond))
			// localplane stops kcm itself, first: kcm must not be left to notice, a lease
			// renew deadline later, that its API server has gone.
			if k.Comm == "kcm" {
				Expect(gone[k.PID]).To(BeNumerically("<", 8*time.Second), "kcm was not stopped on Ctrl-C")
			}
		}
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", apiServer.Host)
		if err == nil {
			conn.Close()
		}
		Expect(err).To(HaveOccurred(), "something still listens on the API server's address %s", apiServer.Host)
	})
})
