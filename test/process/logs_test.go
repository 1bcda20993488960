//go:build linux

package process_test

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/test/cluster"
)

// kcm logs through k8s.io/component-base/logs as upstream does: klog's text format by default,
// -v and --vmodule reaching client-go and controller-runtime alike, --logging-format=json.
var _ = Describe("Logs", func() {
	// One controller, whose Namespace and ServiceAccount caches and writes are enough to log,
	// connected as kubeadm connects kube-controller-manager.
	var saOnly []string
	BeforeEach(func() {
		_, connection := kubeadmConnection()
		saOnly = slices.Clip(append(connection, "--leader-elect=false", "--controllers=serviceaccount-controller"))
	})

	It("reach client-go and controller-runtime with -v, as upstream's", func() {
		quiet := startKCM("kcm", saOnly...)
		verbose := startKCM("kcm-v6", append(saOnly, "-v=6")...)
		// The positive witness in both: the controller runs.
		Eventually(workersStarted(quiet, "serviceaccount-controller")).WithTimeout(30 * time.Second).Should(Equal(1))
		Eventually(workersStarted(verbose, "serviceaccount-controller")).WithTimeout(30 * time.Second).Should(Equal(1))
		// A namespace of its own, whose default ServiceAccount both create (one of them first).
		newNamespace(env.Client)

		// client-go's request log (V(6)), for the cache's lists and for the controller's
		// writes, which carry the controller's logger; client-go's reflector (V(2));
		// controller-runtime's per-reconcile lines (V(5)).
		Eventually(func() []cluster.LogLine { return messages(verbose, "Response") }).WithTimeout(30*time.Second).Should(
			ContainElement(HaveField("Fields", And(
				HaveKeyWithValue("verb", "POST"), HaveKeyWithValue("url", HaveSuffix("/serviceaccounts")), HaveKey("status"),
				HaveKeyWithValue("controller", "serviceaccount-controller")))), "kcm -v=6: %s", verbose.State())
		Expect(messages(verbose, "Caches populated")).NotTo(BeEmpty())
		Expect(messages(verbose, "Reconciling")).NotTo(BeEmpty())
		// And every flag's value at -v=1, as upstream prints them.
		Expect(verbose.Lines(`FLAG: --v="6"`)).To(HaveLen(1))

		for _, msg := range []string{"Response", "Caches populated", "Reconciling"} {
			Expect(messages(quiet, msg)).To(BeEmpty(), "kcm -v=0 logs %q", msg)
		}
		Expect(quiet.Lines("FLAG: ")).To(BeEmpty())
	})

	It("follow --vmodule per source file, as upstream's", func() {
		// reflector.go at 3, everything else at 0.
		p := startKCM("kcm", append(saOnly, "--vmodule=reflector=3")...)
		Eventually(workersStarted(p, "serviceaccount-controller")).WithTimeout(30 * time.Second).Should(Equal(1))
		Eventually(func() []cluster.LogLine { return messages(p, "Caches populated") }).Should(HaveLen(2), "Namespaces and ServiceAccounts")
		Expect(messages(p, "Starting reflector")).To(HaveLen(2))
		Expect(messages(p, "Reconciling")).To(BeEmpty(), "controller-runtime's controller.go is at 0")
	})

	It("are JSON lines with upstream's keys with --logging-format=json", func() {
		p := startKCM("kcm", append(saOnly, "--logging-format=json", "-v=2")...)
		Eventually(func() []map[string]any { return jsonLines(p, "Starting workers") }).WithTimeout(30*time.Second).
			Should(ConsistOf(HaveKeyWithValue("controller", "serviceaccount-controller")), "kcm: %s", p.State())
		Expect(jsonLines(p, "Caches populated")).To(HaveLen(2), "Namespaces and ServiceAccounts")

		for _, line := range strings.Split(strings.TrimSpace(p.Output()), "\n") {
			var entry map[string]any
			Expect(json.Unmarshal([]byte(line), &entry)).To(Succeed(), "not a JSON line: %q", line)
			Expect(entry).To(And(HaveKey("ts"), HaveKey("caller"), HaveKey("msg")), "line %q", line)
		}
		Expect(jsonLines(p, "Controllers set up")).To(ConsistOf(And(
			HaveKeyWithValue("v", BeNumerically("==", 0)), HaveKeyWithValue("logger", "controllers"),
			HaveKeyWithValue("caller", MatchRegexp(`^setup/select\.go:\d+$`)),
			HaveKeyWithValue("controllers", ConsistOf("serviceaccount-controller")))))
		Expect(jsonLines(p, "Caches populated")).To(HaveEach(And(
			HaveKeyWithValue("v", BeNumerically("==", 2)), HaveKeyWithValue("caller", MatchRegexp(`^cache/reflector\.go:\d+$`)))))
		// client-go's reflector line has every key of upstream's, in the same configuration (and
		// the name of controller-runtime's cache logger, "logger", besides).
		if bin := upstreamKCM(); bin != "" {
			u := startProcess("upstream", syscall.SIGKILL, bin, append(saOnly, "--secure-port=0",
				"--leader-elect-resource-name="+uniqueLeaseName(), "--logging-format=json", "-v=2")...)
			Eventually(func() []map[string]any { return jsonLines(u, "Caches populated") }).WithTimeout(30*time.Second).
				ShouldNot(BeEmpty(), "upstream: %s", u.State())
			Expect(keys(jsonLines(p, "Caches populated")[0])).To(ContainElements(keys(jsonLines(u, "Caches populated")[0])))
		}
	})

	DescribeTable("refuse bad logging flags with upstream's message",
		rejectedAsUpstream,
		Entry("an unknown format", `format: Invalid value: "bogus": Unsupported log format`, "--logging-format=bogus"),
		Entry("--vmodule with JSON", "vmodule: Forbidden: Only supported for text log format", "--logging-format=json", "--vmodule=a=2"),
		Entry("no flush period", `flushFrequency: Invalid value: "0s": Must be greater than zero`, "--log-flush-frequency=0"),
		Entry("an alpha option with its gate off", "options.text.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled",
			"--log-text-split-stream"),
		Entry("JSON with LoggingBetaOptions off", "format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature",
			"--logging-format=json", "--feature-gates=LoggingBetaOptions=false"),
	)

	It("lists upstream's logging flags with upstream's help", func() {
		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it)")
		}
		Expect(logFlagHelp(kcmBinary)).To(Equal(logFlagHelp(bin)))
	})
})

// messages returns the process's klog lines whose message is msg.
func messages(p *process, msg string) []cluster.LogLine {
	var lines []cluster.LogLine
	for _, line := range p.Lines(`] "` + msg + `"`) {
		if l, ok := cluster.ParseLogLine(line); ok && l.Message == msg {
			lines = append(lines, l)
		}
	}
	return lines
}

// jsonLines returns the process's JSON log entries whose msg is msg.
func jsonLines(p *process, msg string) []map[string]any {
	var entries []map[string]any
	for _, line := range p.Lines(`"msg":"` + msg + `"`) {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] == msg {
			entries = append(entries, entry)
		}
	}
	return entries
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

// logFlagHelp returns the --help lines of the logging flags, spaces collapsed (the column
// where the help starts depends on the longest flag of all).
func logFlagHelp(bin string) []string {
	GinkgoHelper()
	out, err := exec.Command(bin, "--help").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s --help:\n%s", bin, out)
	flag := regexp.MustCompile(`^\s+(-v, )?--(v|vmodule|log-[a-z-]+|logging-format) `)
	var lines []string
	for _, line := range strings.Split(string(out), "\n") {
		if flag.MatchString(line) {
			lines = append(lines, strings.Join(strings.Fields(line), " "))
		}
	}
	Expect(lines).NotTo(BeEmpty())
	return lines
}
