//go:build linux

package process_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

var _ = Describe("make run's local cluster (hack/localplane)", func() {
	// Run as `make run ARGS="--cloud-provider=pool"` runs it: the printed commands then also
	// give kcm's pool provider the sample address pools and expose the Deployment.
	It("runs kcm as kubeadm does on a whole cluster where a new user's Deployment becomes Available and gets a LoadBalancer address, and leaves nothing running after Ctrl-C", func() {
		lpBinary := filepath.Join(binDir, "localplane")
		build(lpBinary, "./hack/localplane")
		// The Makefile passes KWOK (and builds it) as it does for make e2e.
		kwok := os.Getenv("KWOK")
		if kwok == "" {
			kwok = filepath.Join(root, "bin", "kwok-v0.8.0")
		}
		Expect(kwok).To(BeAnExistingFile(), "run `make kwok` (or `make test`) first")
		assets := os.Getenv("KUBEBUILDER_ASSETS")
		dir := filepath.Join(binDir, "lp")
		// SIGTERM, not SIGKILL, should the suite die first: localplane then stops its children.
		lp := startProcess("localplane", syscall.SIGTERM, lpBinary, "-kcm", kcmBinary, "-kwok", kwok, "-assets", assets, "-dir", dir,
			"--", "--cloud-provider=pool")
		startedAt := time.Now()
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
		Expect(cfg.Host).NotTo(Equal(env.Config.Host), "localplane runs its own cluster")
		cl, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(getSA(cl, "kube-system", defaultSA)).WithTimeout(time.Minute).Should(Succeed())
		Eventually(rootCAData(cl, "kube-system")).WithTimeout(30 * time.Second).Should(Equal(string(cfg.CAData)))
		ns := newNamespace(cl)
		Eventually(getSA(cl, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(rootCAData(cl, ns)).WithTimeout(30 * time.Second).Should(Equal(string(cfg.CAData)))
		// kcm's default Lease, which no other spec touches.
		Eventually(holder(cl, "kube-controller-manager")).WithTimeout(10 * time.Second).Should(MatchRegexp(identityPattern()))

		AddReportEntry("localplane ready (nodes schedulable) after", time.Since(startedAt).Round(time.Millisecond).String())

		kids = children(lp.Pid())
		var names []string
		var kcmInfo procInfo
		for _, k := range kids {
			names = append(names, k.Comm)
			if k.Comm == "kcm" {
				kcmInfo = k
			}
		}
		// /proc's comm is the binary's name cut to 15 bytes.
		kwokComm := filepath.Base(kwok)[:min(len(filepath.Base(kwok)), 15)]
		Expect(names).To(ContainElements("etcd", "kube-apiserver", "kube-scheduler", kwokComm, "kcm"), "localplane's children: %v", kids)

		By("kcm runs as kubeadm runs kube-controller-manager: controller-manager.conf's identity, each controller as its ServiceAccount")
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(kcmInfo.PID), "cmdline"))
		Expect(err).NotTo(HaveOccurred())
		kcmArgs := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		Expect(kcmArgs).To(ContainElements(
			"--kubeconfig="+filepath.Join(dir, "node/etc/kubernetes/controller-manager.conf"),
			"--use-service-account-credentials=true",
			"--controllers=*,bootstrapsigner,tokencleaner",
			"--secure-port=0",
			"--cloud-provider=pool",
		))
		Expect(kcmArgs).NotTo(ContainElement("--secure-port=10257"), "a real kube-controller-manager's port")

		By("a new user follows the printed commands: a Deployment of 2 replicas")
		commands := printedCommands(lp.Output())
		Expect(commands).To(HaveLen(7), "localplane's printed commands:\n%s", lp.Output())
		Expect(commands[0]).To(HaveSuffix("create deployment hello --image=nginx --replicas=2"))
		runShell(commands[0], assets)
		createdAt := time.Now()
		hello := &appsv1.Deployment{}
		Eventually(func(g Gomega) {
			g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "hello"}, hello)).To(Succeed())
			s := hello.Status
			g.Expect(s.ObservedGeneration).To(Equal(hello.Generation), "observedGeneration")
			g.Expect([]int32{s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas}).To(HaveEach(BeEquivalentTo(2)),
				"replicas, updated, ready, available")
			g.Expect(hello.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", corev1.ConditionTrue))))
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "localplane: %s", lp.State())
		AddReportEntry("Deployment hello Available after", time.Since(createdAt).Round(time.Millisecond).String())
		pods := &corev1.PodList{}
		Expect(cl.List(context.Background(), pods, client.InNamespace("default"), client.MatchingLabels{"app": "hello"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			node := &corev1.Node{}
			Expect(cl.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed(), "pod %s's node", p.Name)
			Expect(node.Annotations).To(HaveKeyWithValue(cluster.KWOKAnnotation, cluster.NodesValue), "pod %s runs on a KWOK node", p.Name)
		}
		Expect(runShell(commands[1], assets)).To(And(ContainSubstring("deployment.apps/hello"), ContainSubstring("Running")))
		// The ServiceAccounts kcm's client builder made for the controllers that did it.
		for _, sa := range []string{"deployment-controller", "replicaset-controller"} {
			Expect(getSA(cl, "kube-system", sa)()).To(Succeed())
		}

		By("make run ARGS=--cloud-provider=pool: the sample address pools applied as printed, the Deployment exposed as a LoadBalancer Service gets an address")
		Expect(commands[2]).To(HaveSuffix("apply -f " + filepath.Join(root, "config", "cloud-pool", "address-pools.yaml")))
		runShell(commands[2], assets)
		Expect(commands[3]).To(HaveSuffix("expose deployment hello --type=LoadBalancer --port=80"))
		runShell(commands[3], assets)
		exposedAt := time.Now()
		// The lowest address of the sample's pool for every namespace.
		const sampleAddress = "192.0.2.240"
		Eventually(func(g Gomega) []corev1.LoadBalancerIngress {
			svc := &corev1.Service{}
			g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "hello"}, svc)).To(Succeed())
			return svc.Status.LoadBalancer.Ingress
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(HaveExactElements(And(
			HaveField("IP", sampleAddress), HaveField("IPMode", HaveValue(Equal(corev1.LoadBalancerIPModeVIP))))),
			"localplane: %s", lp.State())
		AddReportEntry("Service hello (type LoadBalancer) has an address after", time.Since(exposedAt).Round(time.Millisecond).String())
		Expect(runShell(commands[4], assets)).To(MatchRegexp(`(?m)^hello\s+LoadBalancer\s+\S+\s+` + regexp.QuoteMeta(sampleAddress) + `\s`))

		By("adding a node as printed: KWOK runs it and pods may go there")
		Expect(commands[5]).To(ContainSubstring("apply -f " + filepath.Join(dir, "node.yaml")))
		runShell(commands[5], assets)
		Expect(commands[6]).To(HavePrefix("sed "))
		runShell(strings.Replace(commands[6], "my-node", "added-node", 1), assets)
		for _, name := range []string{cluster.NodeName(3), "added-node"} {
			Eventually(func(g Gomega) {
				node := &corev1.Node{}
				g.Expect(cl.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
				g.Expect(node.Annotations).To(HaveKeyWithValue(cluster.KWOKAnnotation, cluster.NodesValue))
				g.Expect(cluster.Schedulable(node)).To(BeTrue(), "node %s Ready, without the not-ready taint: %v", name, node.Spec.Taints)
			}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "localplane: %s", lp.State())
		}

		forbidden := forbiddenLines(lp)
		Expect(forbidden).To(BeEmpty(), "%d lines of kcm's output say forbidden:\n%s",
			len(forbidden), strings.Join(forbidden[:min(len(forbidden), 20)], "\n"))

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

// printedCommands are the commands localplane prints for the user, in order: the lines of its
// output indented under "Try:" and "Add a node".
func printedCommands(output string) []string {
	var commands []string
	for _, l := range strings.Split(output, "\n") {
		if strings.HasPrefix(l, "  kubectl ") || strings.HasPrefix(l, "  sed ") {
			commands = append(commands, strings.TrimSpace(l))
		}
	}
	return commands
}

// runShell runs a printed command line in bash, as a user would paste it, with the suite's
// kubectl first on the PATH, and returns its output.
func runShell(command, assets string) string {
	GinkgoHelper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = append(os.Environ(), "PATH="+assets+string(filepath.ListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("$ %s\n%s", command, out)
	Expect(err).NotTo(HaveOccurred(), "%s:\n%s", command, out)
	return string(out)
}
