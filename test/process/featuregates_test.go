//go:build linux

package process_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// upstreamKCM is upstream's kube-controller-manager v1.37.1 (make bench and make e2e build
// it), or "" when it is not there: the specs then check kcm against upstream's messages and
// defaults as recorded here, and say that they did not run upstream.
func upstreamKCM() string {
	bin := os.Getenv("UPSTREAM_KCM")
	if bin == "" {
		bin = filepath.Join(root, "bin", "k8s", "1.37.1", "kube-controller-manager")
	}
	if _, err := os.Stat(bin); err != nil {
		return ""
	}
	return bin
}

// upstreamError runs upstream's binary with args and returns the error it exits with
// ("command failed" err="...").
func upstreamError(bin string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(bin, append(args, "--kubeconfig=/dev/null")...).CombinedOutput()
	Expect(err).To(HaveOccurred(), "upstream accepted %v:\n%s", args, out)
	m := regexp.MustCompile(`"command failed" err=("(?:[^"\\]|\\.)*")`).FindSubmatch(out)
	Expect(m).NotTo(BeNil(), "upstream's output:\n%s", out)
	msg, err := strconv.Unquote(string(m[1]))
	Expect(err).NotTo(HaveOccurred())
	return msg
}

// kcmError runs kcm with args and returns the error it exits with ("kcm: ...").
func kcmError(args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(kcmBinary, append(args, "--kubeconfig=/dev/null")...).CombinedOutput()
	Expect(err).To(HaveOccurred(), "kcm accepted %v:\n%s", args, out)
	msg, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "kcm: ")
	Expect(ok).To(BeTrue(), "kcm's output:\n%s", out)
	return msg
}

// rejectedAsUpstream checks that kcm refuses args with want, upstream's message, and that
// upstream's binary (when built) still says exactly that.
func rejectedAsUpstream(want string, args ...string) {
	GinkgoHelper()
	if bin := upstreamKCM(); bin != "" {
		Expect(upstreamError(bin, args...)).To(Equal(want), "upstream's message has changed")
	} else {
		By("upstream's kube-controller-manager is not built: comparing with its recorded message")
	}
	Expect(kcmError(args...)).To(Equal(want))
}

// gateHelp returns the feature gates a --help lists ("kube:X=true|false (BETA - default=true)"),
// sorted: every gate not yet GA, with its stage and default at the emulated version.
func gateHelp(bin string) []string {
	GinkgoHelper()
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	gates := regexp.MustCompile(`kube:\S+=true\|false \([^)]*\)(?:, or [^\n]*)?`).FindAllString(string(out), -1)
	Expect(gates).NotTo(BeEmpty(), "%s --help lists no gate:\n%s", bin, out)
	sort.Strings(gates)
	return gates
}

var _ = Describe("--feature-gates", func() {
	DescribeTable("is rejected with upstream's message",
		rejectedAsUpstream,
		Entry("an unknown gate", "unrecognized feature gate: Nope", "--feature-gates=Nope=true"),
		Entry("an unknown gate with the kube: prefix", "unrecognized feature gate: Nope", "--feature-gates=kube:Nope=true"),
		Entry("a value that is not a bool",
			`invalid value of SeparateTaintEvictionController=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`,
			"--feature-gates=SeparateTaintEvictionController=maybe"),
		Entry("no value", "missing bool value for SeparateTaintEvictionController", "--feature-gates=SeparateTaintEvictionController"),
		Entry("a locked gate set away from its default",
			"cannot set feature gate SeparateTaintEvictionController to false, feature is locked to true",
			"--feature-gates=SeparateTaintEvictionController=false"),
		Entry("an unknown component", "component not registered: other", "--feature-gates=other:A=true"),
		Entry("both prefixes mixed", "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
			"--feature-gates=StatefulSetSemanticRevisionComparison=true", "--feature-gates=kube:GenericWorkload=true"),
		Entry("an emulated version out of range",
			"[emulation version 1.30 is not between [1.34, 1.37.0], minCompatibilityVersion version 1.34 is not between [1.34, 1.30]]",
			"--emulated-version=1.30"),
	)

	It("turns off a controller whose required gate is off, as upstream", func() {
		// podgroup-protection-controller requires GenericWorkload (beta, off by default).
		p := startKCM("kcm", "--leader-elect=false", "--controllers=podgroup-protection-controller,ttl-controller")
		Eventually(p.Count("Controllers set up")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", p.State())
		Expect(p.Lines("Controller is disabled by a feature gate")).To(ConsistOf(
			And(ContainSubstring(`"podgroup-protection-controller"`), ContainSubstring("GenericWorkload"))))
		Expect(p.Lines("Controllers set up")[0]).To(ContainSubstring(`"ttl-controller"`))

		on := startKCM("kcm-gate-on", "--leader-elect=false", "--controllers=podgroup-protection-controller,ttl-controller",
			"--feature-gates=GenericWorkload=true")
		Eventually(on.Count("Controllers set up")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", on.State())
		Expect(on.Lines("Controller is disabled by a feature gate")).To(BeEmpty())
		Expect(logField(on.Lines("Controllers set up")[0], "controllers")).To(ConsistOf("podgroup-protection-controller", "ttl-controller"))
	})

	It("names once the gates given that nothing in kcm acts on", func() {
		p := startKCM("kcm", "--leader-elect=false", "--controllers=ttl-controller,taint-eviction-controller",
			"--feature-gates=CoordinatedLeaderElection=true,TaintTolerationComparisonOperators=true,WatchListClient=false,StatefulSetSemanticRevisionComparison=false")
		Eventually(p.Count("Controllers set up")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", p.State())
		// Read by taint-eviction-controller's Setup, and by client-go: acted on. Only
		// statefulset-controller, which does not run, would read the last one.
		ignored := p.Lines("Feature gates given that kcm does not act on")
		Expect(ignored).To(HaveLen(1))
		Expect(logField(ignored[0], "featureGates")).To(Equal([]string{"CoordinatedLeaderElection", "StatefulSetSemanticRevisionComparison"}))
	})

	It("lists upstream's gates with upstream's stages and defaults", func() {
		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it)")
		}
		Expect(gateHelp(kcmBinary)).To(Equal(gateHelp(bin)))
	})

	It("exports kubernetes_feature_enabled on /metrics as upstream does, with the flag's values", func() {
		args := []string{"--leader-elect=false", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz,/metrics",
			"--feature-gates=StatefulSetSemanticRevisionComparison=false,GenericWorkload=true"}
		port := freePort()
		startKCM("kcm", append(args, "--secure-port="+strconv.Itoa(port), "--controllers=ttl-controller")...)
		got := featureMetrics(port)
		Expect(got).To(ContainElements(
			`kubernetes_feature_enabled{name="StatefulSetSemanticRevisionComparison",stage="BETA"} 0`, // on by default, turned off
			`kubernetes_feature_enabled{name="GenericWorkload",stage="BETA"} 1`,                       // off by default, turned on
			`kubernetes_feature_enabled{name="DeploymentReplicaSetTerminatingReplicas",stage="BETA"} 1`,
			`kubernetes_feature_enabled{name="SeparateTaintEvictionController",stage=""} 1`,
			`kubernetes_feature_enabled{name="CSIVolumeHealth",stage="ALPHA"} 0`,
		))

		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it): not compared with its /metrics")
		}
		upstreamPort := freePort()
		p := startProcess("upstream", syscall.SIGKILL, bin, append(args, "--kubeconfig="+kubeconfig,
			"--secure-port="+strconv.Itoa(upstreamPort), "--controllers=ttl-controller")...)
		want := featureMetrics(upstreamPort)
		Expect(got).To(Equal(want), "upstream: %s", p.State())
	})
})

// featureMetrics scrapes https://127.0.0.1:port/metrics until it answers and returns its
// kubernetes_feature_enabled samples, sorted.
func featureMetrics(port int) []string {
	GinkgoHelper()
	hc := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed
	}
	DeferCleanup(hc.CloseIdleConnections)
	var samples []string
	Eventually(func(g Gomega) {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s", body)
		samples = nil
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "kubernetes_feature_enabled{") {
				samples = append(samples, line)
			}
		}
		g.Expect(samples).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	sort.Strings(samples)
	return samples
}
