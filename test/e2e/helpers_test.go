//go:build e2e && linux

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

const pauseImage = "registry.k8s.io/pause:3.10"

// newNamespace creates a namespace for one spec and deletes it when the spec ends (kcm's
// namespace-controller empties it).
func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	Expect(cl.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(cl.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// podTemplate is a pod KWOK runs: one pause container.
func podTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: image}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
}

func newDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, pauseImage),
		},
	}
}

// waitDeploymentComplete waits until the Deployment has rolled out replicas pods of its
// current template, all available, and reports Available.
func waitDeploymentComplete(ctx context.Context, ns, name string, replicas int32) *appsv1.Deployment {
	GinkgoHelper()
	d := &appsv1.Deployment{}
	Eventually(ctx, func(g Gomega) {
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
		s := d.Status
		g.Expect(s.ObservedGeneration).To(BeNumerically(">=", d.Generation), "observedGeneration")
		g.Expect([]int32{s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas}).To(HaveEach(replicas),
			"replicas, updated, ready, available")
		g.Expect(deploymentCondition(d, appsv1.DeploymentAvailable)).To(Equal(corev1.ConditionTrue), "Available")
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "Deployment %s/%s; logs in %s", ns, name, logDir)
	return d
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) corev1.ConditionStatus {
	for _, c := range j.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// waitJobComplete waits until the Job reports Complete with succeeded pods.
func waitJobComplete(ctx context.Context, ns, name string, succeeded int32, timeout time.Duration) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		j := &batchv1.Job{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(Succeed())
		g.Expect(j.Status.Succeeded).To(Equal(succeeded), "succeeded")
		g.Expect(jobCondition(j, batchv1.JobComplete)).To(Equal(corev1.ConditionTrue), "Complete")
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed(), "Job %s/%s; logs in %s", ns, name, logDir)
}

// livePods lists the pods in ns matching labels that are not being deleted.
func livePods(g Gomega, ns string, labels map[string]string) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(cl.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// replicaSets lists the ReplicaSets in ns matching labels.
func replicaSets(g Gomega, ns string, labels map[string]string) []appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	g.Expect(cl.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	return list.Items
}

// runKubectl runs bin/k8s/1.37.1/kubectl against the cluster and returns its combined output.
func runKubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("$ kubectl %s\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// expectRolloutStatus runs `kubectl rollout status` on the Deployment and expects exit code 0.
func expectRolloutStatus(ctx context.Context, ns, name string) {
	GinkgoHelper()
	out, err := runKubectl(ctx, "-n", ns, "rollout", "status", "deployment/"+name, "--timeout=2m")
	Expect(err).NotTo(HaveOccurred(), "kubectl rollout status:\n%s\nlogs in %s", out, logDir)
	Expect(out).To(ContainSubstring("successfully rolled out"))
}

// forbiddenLines returns the lines of a log that say "is forbidden", in any case: a request the
// API server refused (403, `<resource> "<name>" is forbidden: User ... cannot ...`) for want of
// a right, or by an admission plugin. A field's validation error ("spec.podCIDRs: Forbidden:
// ...", 422 Invalid) is not one: upstream's node-ipam logs one when a stale cache makes it
// allocate twice for a node (its range allocator patches a second CIDR, the API server refuses
// the change), which is upstream's behaviour, not a missing right. Nor is a pod that quota
// admission refused ("is forbidden: exceeded quota: ..."): explain_test.go fills a quota on
// purpose, and replicaset-controller logs each create refused, as upstream's does.
func forbiddenLines(path string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if lower := strings.ToLower(l); strings.Contains(lower, "is forbidden") && !strings.Contains(lower, "is forbidden: exceeded quota: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// freePort is a TCP port on loopback that nothing listens on now.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// controllersSetUp lists the controllers kcm's last "Controllers set up" log line names (the
// log at path holds every kcm process of the run, in order), or nil before there is one.
func controllersSetUp(path string) []string {
	GinkgoHelper()
	lines := logMessages(path, "Controllers set up")
	if len(lines) == 0 {
		return nil
	}
	return lines[len(lines)-1].Strings("controllers")
}

// logMessages returns the lines of the log at path (klog's text format) whose message is msg.
func logMessages(path, msg string) []cluster.LogLine {
	GinkgoHelper()
	var lines []cluster.LogLine
	for _, line := range logLines(path, `] "`+msg+`"`) {
		if l, ok := cluster.ParseLogLine(line); ok && l.Message == msg {
			lines = append(lines, l)
		}
	}
	return lines
}

// disabledByGates matches kcm's "Controller is disabled by a feature gate" line for controller,
// naming gates, in order, as the ones it requires.
func disabledByGates(controller string, gates ...string) OmegaMatcher {
	required := make([]any, 0, len(gates))
	for _, g := range gates {
		required = append(required, g)
	}
	return HaveField("Fields", And(HaveKeyWithValue("controller", controller), HaveKeyWithValue("requiredFeatureGates", Equal(required))))
}

// restartKCM stops the suite's kcm (it releases the Lease) and starts it again with
// kubeadm's arguments and the overrides ("--name=value" replaces kubeadm's flag of that
// name), and waits until the new process holds the Lease; it is the suite's kcm for the
// specs after.
func restartKCM(ctx context.Context, overrides ...string) {
	GinkgoHelper()
	restartKCMWith(ctx, local.KubeadmArgs(append([]string{fmt.Sprintf("--secure-port=%d", freePort())}, overrides...)...))
}

// restartKCMWith is restartKCM with the whole command line.
func restartKCMWith(ctx context.Context, args []string) {
	GinkgoHelper()
	const lease = "kube-controller-manager"
	old := leaseHolder(ctx, lease)
	components = without(components, kcm)
	kcm.Stop(30 * time.Second)
	p, err := local.StartProcess("kcm", kcmBinary, args...)
	Expect(err).NotTo(HaveOccurred())
	replaceKCM(p)
	// The stopped process released the Lease (an empty holder); each process has an identity of its own.
	Eventually(ctx, func() string { return leaseHolder(ctx, lease) }).WithTimeout(time.Minute).
		Should(And(Not(BeEmpty()), Not(Equal(old))), "the restarted kcm leads: %s", p.State())
}

// startKCM starts kcm with the command line of kubeadm's static pod; its log is kcm.log, which
// every kcm process of the run appends to.
func startKCM() *cluster.Process {
	GinkgoHelper()
	// kubeadm's port 10257 may be taken on this machine (another run, a real cluster).
	p, err := local.StartProcess("kcm", kcmBinary, local.KubeadmArgs(fmt.Sprintf("--secure-port=%d", freePort()))...)
	Expect(err).NotTo(HaveOccurred())
	return p
}

// startKWOK starts a kwok process managing the nodes annotated kwok.x-k8s.io/node=<value>;
// it stops when the spec ends.
func startKWOK(name, value string) *cluster.Process {
	GinkgoHelper()
	p, err := local.StartProcess(name, kwokBinary, cluster.KWOKArgs(kubeconfig, local.StagesFile, value)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Stop, 10*time.Second)
	return p
}

// createNode creates a fake node for the kwok process that manages annotation value.
func createNode(ctx context.Context, name, value string) {
	GinkgoHelper()
	Expect(cl.Create(ctx, cluster.NewNode(name, value))).To(Succeed())
}

// waitNodeSchedulable waits until the node is Ready and the not-ready taint the API server
// put on it is gone (kcm's node-lifecycle-controller lifts it).
func waitNodeSchedulable(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		g.Expect(cluster.Schedulable(node)).To(BeTrue(), "node %s Ready, without the not-ready taint: %v", name, node.Spec.Taints)
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
}

// build builds a main package of this module into out.
func build(out, pkg string) {
	GinkgoHelper()
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build %s:\n%s", pkg, output)
	GinkgoWriter.Printf("built %s in %s\n", pkg, time.Since(start).Round(time.Millisecond))
}

// envOr returns the environment variable's value, a path taken from the repository root when
// relative, or def when unset.
func envOr(key, def string) string {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(root, v)
	}
	return v
}
