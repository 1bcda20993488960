package podgc_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/podgc"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("pod-garbage-collector-controller", func() {
	ctx := context.Background()
	var (
		ns    string
		nodes []string
	)
	BeforeEach(func() {
		ns, nodes = env.Namespace(ctx, "podgc"), nil
	})
	AfterEach(func() { cleanup(ctx, ns, nodes) })

	// node creates a node with taints, reporting Ready when ready (otherwise it has no Ready
	// condition, as a node whose kubelet never reported).
	node := func(suffix string, ready bool, taints ...corev1.Taint) string {
		status := corev1.ConditionTrue
		if !ready {
			status = ""
		}
		n := env.Node(ctx, ns+"-"+suffix, testenv.NodeReady(status), testenv.NodeTaints(taints...))
		nodes = append(nodes, n.Name)
		return n.Name
	}
	// live checks that every pod named is there and not being deleted.
	live := func(g Gomega, names ...string) {
		for _, name := range names {
			p := getPod(g, ns, name)
			g.Expect(p).NotTo(BeNil(), "pod %s", name)
			g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s", name)
		}
	}

	It("deletes the terminated pods above the threshold, evicted first then oldest, and keeps the others", func() {
		Expect(threshold).To(Equal(3))
		// Created in reverse order of name, in distinct seconds of the API server's clock
		// (creation timestamps count whole seconds): e is the oldest, a the newest.
		pods := map[string]*corev1.Pod{"e": createPod(ctx, ns, "e", "", false)}
		awaitServerSecondAfter(ctx, ns, pods["e"])
		for _, name := range []string{"d", "c", "b"} {
			pods[name] = createPod(ctx, ns, name, "", false)
		}
		awaitServerSecondAfter(ctx, ns, pods["b"])
		pods["a"] = createPod(ctx, ns, "a", "", false)
		Expect(pods["a"].CreationTimestamp.After(pods["b"].CreationTimestamp.Time)).To(BeTrue())
		Expect(pods["d"].CreationTimestamp.After(pods["e"].CreationTimestamp.Time)).To(BeTrue())
		// a, the newest, is evicted. Whatever passes run while the pods finish, a and e go.
		env.SetPodStatus(ctx, pods["a"], testenv.Phase(corev1.PodFailed, "Evicted"))
		env.SetPodStatus(ctx, pods["e"], testenv.Phase(corev1.PodSucceeded, ""))
		env.SetPodStatus(ctx, pods["b"], testenv.Phase(corev1.PodSucceeded, ""))
		env.SetPodStatus(ctx, pods["c"], testenv.Phase(corev1.PodFailed, ""))
		env.SetPodStatus(ctx, pods["d"], testenv.Phase(corev1.PodSucceeded, ""))

		Eventually(func(g Gomega) {
			g.Expect(getPod(g, ns, "a")).To(BeNil())
			g.Expect(getPod(g, ns, "e")).To(BeNil())
		}).Should(Succeed())
		Consistently(func(g Gomega) { live(g, "b", "c", "d") }, 3*period, 100*time.Millisecond).Should(Succeed())
		// Upstream's counters count every attempt, and as failed those that erred (a pass
		// reading the cache before it saw a deletion may try again and find the pod gone):
		// two pods went.
		deleted := map[string]string{"namespace": ns, "reason": "terminated"}
		attempts := testenv.Sample("pod_gc_collector_force_delete_pods_total", deleted)
		failed := testenv.Sample("pod_gc_collector_force_delete_pod_errors_total", deleted)
		Expect(attempts - failed).To(Equal(2.0))
	})

	It("deletes the pods of a node that does not exist after the quarantine, with DisruptionTarget, and keeps those of nodes that exist", func() {
		existing := node("existing", true)
		ghost, late := ns+"-ghost", ns+"-late"
		// No pod can be seen missing its node before it exists, so none can go before
		// created plus the quarantine.
		created := time.Now()
		pods := []*corev1.Pod{
			createPod(ctx, ns, "orphan-held", ghost, true),
			createPod(ctx, ns, "orphan", ghost, false),
			createPod(ctx, ns, "kept", existing, false),
			createPod(ctx, ns, "late", late, false),
		}
		for _, p := range pods {
			env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodRunning, ""))
		}
		// The late node shows up during the quarantine of its pod, once a pass has seen the
		// pod without it.
		awaitPass(ctx, ns)
		nodes = append(nodes, late)
		env.Node(ctx, late)

		// Halfway through the quarantine, nothing is deleted yet.
		Consistently(func(g Gomega) { live(g, "orphan-held", "orphan", "kept", "late") },
			time.Until(created.Add(quarantine/2)), 100*time.Millisecond).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(getPod(g, ns, "orphan")).To(BeNil())
			p := getPod(g, ns, "orphan-held")
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.DeletionTimestamp).NotTo(BeNil())
			g.Expect(p.DeletionGracePeriodSeconds).To(HaveValue(BeZero()))
			g.Expect(p.Status.Phase).To(Equal(corev1.PodFailed))
			// The generation the patch saw; the deletion that followed bumped it.
			g.Expect(p.Generation).To(Equal(int64(2)))
			g.Expect(p.Status.ObservedGeneration).To(Equal(int64(1)))
			c := disruptionTarget(p)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(podgc.ReasonDeletionByPodGC))
			g.Expect(c.Message).To(Equal("PodGC: node no longer exists"))
			g.Expect(c.ObservedGeneration).To(Equal(int64(1)))
			g.Expect(c.LastTransitionTime.IsZero()).To(BeFalse())
			g.Expect(testenv.Sample("pod_gc_collector_force_delete_pods_total",
				map[string]string{"namespace": ns, "reason": "orphaned"})).To(BeNumerically(">=", 2))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			live(g, "kept", "late")
			g.Expect(getPod(g, ns, "kept").Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(getPod(g, ns, "late").Status.Phase).To(Equal(corev1.PodRunning))
		}, 3*period, 100*time.Millisecond).Should(Succeed())
	})

	It("marks a terminating unscheduled pod Failed, without DisruptionTarget, and deletes it", func() {
		doomed := createPod(ctx, ns, "doomed", "", true)
		createPod(ctx, ns, "pending", "", false)
		// Unscheduled: the API server sets grace period 0, the finalizer keeps it.
		Expect(env.Client.Delete(ctx, doomed)).To(Succeed())

		Eventually(func(g Gomega) {
			p := getPod(g, ns, "doomed")
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodFailed))
			g.Expect(disruptionTarget(p)).To(BeNil())
			g.Expect(testenv.Sample("pod_gc_collector_force_delete_pods_total",
				map[string]string{"namespace": ns, "reason": "unscheduled"})).To(BeNumerically(">=", 1))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			live(g, "pending")
			g.Expect(getPod(g, ns, "pending").Status.Phase).To(Equal(corev1.PodPending))
		}, 3*period, 100*time.Millisecond).Should(Succeed())
	})

	It("force-deletes the terminating pods of a not-ready node tainted out-of-service, marked Failed without DisruptionTarget", func() {
		outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
		oos := node("oos", false, outOfService)
		readyTainted := node("ready-tainted", true, outOfService)
		notReady := node("not-ready", false)
		pods := []*corev1.Pod{
			createPod(ctx, ns, "held", oos, true),
			createPod(ctx, ns, "gone", oos, false),
			createPod(ctx, ns, "running", oos, false),
			createPod(ctx, ns, "on-ready", readyTainted, false),
			createPod(ctx, ns, "on-not-ready", notReady, false),
		}
		for _, p := range pods {
			env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodRunning, ""))
		}
		// Bound and running: deleting gives them the default 30s grace period, which no
		// kubelet will end.
		for _, p := range pods {
			if p.Name != "running" {
				Expect(env.Client.Delete(ctx, p)).To(Succeed())
			}
		}

		Eventually(func(g Gomega) {
			g.Expect(getPod(g, ns, "gone")).To(BeNil())
			p := getPod(g, ns, "held")
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.DeletionGracePeriodSeconds).To(HaveValue(BeZero()))
			g.Expect(p.Status.Phase).To(Equal(corev1.PodFailed))
			g.Expect(disruptionTarget(p)).To(BeNil())
			g.Expect(testenv.Sample("pod_gc_collector_force_delete_pods_total",
				map[string]string{"namespace": ns, "reason": "out-of-service"})).To(BeNumerically(">=", 2))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			live(g, "running")
			for _, name := range []string{"running", "on-ready", "on-not-ready"} {
				p := getPod(g, ns, name)
				g.Expect(p).NotTo(BeNil(), name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), name)
				if name != "running" {
					g.Expect(p.DeletionGracePeriodSeconds).To(HaveValue(BeNumerically("==", 30)), name)
				}
			}
		}, 3*period, 100*time.Millisecond).Should(Succeed())
	})

	It("reads --terminated-pod-gc-threshold through its own Setup", func() {
		// The suite's manager set the controller up from --terminated-pod-gc-threshold=3.
		Expect(threshold).To(Equal(3))
	})
})
