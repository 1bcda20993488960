package nodelifecycle_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/node/topology"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("node-lifecycle-controller", func() {
	ctx := context.Background()
	var prefix string
	nodeName := func(n string) string { return prefix + "-" + n }
	BeforeEach(func() {
		prefix = fmt.Sprintf("n%d", time.Now().UnixNano()%1_000_000)
	})
	// register adds a node and removes it when the spec ends.
	register := func(name string, labels map[string]string) *corev1.Node {
		node := kubelet.register(nodeName(name), labels)
		DeferCleanup(func() {
			kubelet.setAlive(false, node.Name)
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed())
		})
		return node
	}

	It("lifts the API server's not-ready:NoSchedule taint once the node is Ready, and mirrors conditions and unschedulable", func() {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName("fresh")}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed()) })
		// The TaintNodesByCondition admission plugin taints every new node: the create's answer
		// shows it (a read could already find it lifted: a node without conditions has no
		// condition taint, and the controller, as upstream's, removes it).
		Expect(taintKeys(node, corev1.TaintEffectNoSchedule)).To(ContainElement(corev1.TaintNodeNotReady))

		kubelet.register(nodeName("ready"), nil)
		DeferCleanup(func() { kubelet.setAlive(false, nodeName("ready")) })
		reportReady(node)
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(getNode(g, node.Name), corev1.TaintEffectNoSchedule)).To(BeEmpty())
		}).Should(Succeed())

		Eventually(func() error {
			n := getNode(Default, node.Name)
			n.Spec.Unschedulable = true
			return env.Client.Update(ctx, n)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(getNode(g, node.Name), corev1.TaintEffectNoSchedule)).To(ConsistOf(corev1.TaintNodeUnschedulable))
		}).Should(Succeed())

		Eventually(func() error {
			n := getNode(Default, node.Name)
			n.Status.Conditions[1].Status = corev1.ConditionTrue // MemoryPressure
			return env.Client.Status().Update(ctx, n)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(getNode(g, node.Name), corev1.TaintEffectNoSchedule)).To(ConsistOf(corev1.TaintNodeUnschedulable, corev1.TaintNodeMemoryPressure))
		}).Should(Succeed())
	})

	It("copies the stable OS and architecture labels to their beta names", func() {
		node := register("labels", map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64"})
		Eventually(func(g Gomega) {
			g.Expect(getNode(g, node.Name).Labels).To(And(
				HaveKeyWithValue("beta.kubernetes.io/os", "linux"), HaveKeyWithValue("beta.kubernetes.io/arch", "arm64")))
		}).Should(Succeed())
	})

	It("marks a node that stops renewing Unknown after the grace period, taints it, marks its pods NotReady, and heals it", func() {
		register("healthy", nil)
		node := register("dying", nil)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: node.Name + "-pod"},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pod))).To(Succeed()) })
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())

		// Healthy for longer than the grace period while the kubelet renews.
		Consistently(func(g Gomega) {
			g.Expect(readyOf(getNode(g, node.Name)).Status).To(Equal(corev1.ConditionTrue))
		}, (monitorGrace+1)*time.Second, 500*time.Millisecond).Should(Succeed())

		kubelet.setAlive(false, node.Name)
		stopped := time.Now()
		Eventually(func(g Gomega) {
			n := getNode(g, node.Name)
			ready := readyOf(n)
			g.Expect(ready.Status).To(Equal(corev1.ConditionUnknown))
			g.Expect(ready.Reason).To(Equal("NodeStatusUnknown"))
			g.Expect(ready.Message).To(Equal("Kubelet stopped posting node status."))
			g.Expect(taintKeys(n, corev1.TaintEffectNoSchedule)).To(ContainElement(corev1.TaintNodeUnreachable))
			g.Expect(taintKeys(n, corev1.TaintEffectNoExecute)).To(ConsistOf(corev1.TaintNodeUnreachable))
		}, 15*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(time.Since(stopped)).To(BeNumerically(">=", (monitorGrace-1)*time.Second), "marked Unknown before the grace period ran out")

		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), p)).To(Succeed())
			g.Expect(p.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionFalse))))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events)).To(Succeed())
			// Reported as upstream's node lifecycle controller reports: "node-controller".
			g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "NodeNotReady"), HaveField("Regarding.Name", node.Name),
				HaveField("DeprecatedSource.Component", "node-controller"))))
			g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "NodeNotReady"), HaveField("Regarding.Name", pod.Name),
				HaveField("DeprecatedSource.Component", "node-controller"))))
		}).Should(Succeed())

		// The kubelet comes back.
		kubelet.setAlive(true, node.Name)
		reportReady(node)
		Eventually(func(g Gomega) {
			n := getNode(g, node.Name)
			g.Expect(readyOf(n).Status).To(Equal(corev1.ConditionTrue))
			g.Expect(n.Spec.Taints).To(BeEmpty())
		}).Should(Succeed())
	})

	It("evicts the pods of a dead node after their tolerationSeconds, keeps a tolerating pod, and cancels pending evictions when the node heals", func() {
		register("healthy", nil)
		node := register("dead", nil)
		tolerating := func(name string, seconds *int64) *corev1.Pod {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: node.Name + "-" + name},
				Spec: corev1.PodSpec{
					NodeName:   node.Name,
					Containers: []corev1.Container{{Name: "c", Image: "pause"}},
					Tolerations: []corev1.Toleration{{
						Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds,
					}},
				},
			}
			Expect(env.Client.Create(ctx, p)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, p))).To(Succeed()) })
			return p
		}
		quick := tolerating("quick", ptr.To(int64(2)))
		forever := tolerating("forever", nil)
		patient := tolerating("patient", ptr.To(int64(12)))
		exists := func(p *corev1.Pod) bool {
			got := &corev1.Pod{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)
			return err == nil && got.DeletionTimestamp == nil
		}

		kubelet.setAlive(false, node.Name)
		var taintedAt time.Time
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(getNode(g, node.Name), corev1.TaintEffectNoExecute)).To(ContainElement(corev1.TaintNodeUnreachable))
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
		taintedAt = time.Now()
		Eventually(func() bool { return exists(quick) }, 10*time.Second, 100*time.Millisecond).Should(BeFalse())
		Expect(time.Since(taintedAt)).To(BeNumerically(">=", time.Second), "evicted before its tolerationSeconds")
		Expect(exists(forever)).To(BeTrue())
		Expect(exists(patient)).To(BeTrue())

		// The node heals well before the patient pod's 12s: its eviction is cancelled.
		kubelet.setAlive(true, node.Name)
		reportReady(node)
		Eventually(func(g Gomega) {
			g.Expect(getNode(g, node.Name).Spec.Taints).To(BeEmpty())
		}).Should(Succeed())
		Consistently(func() bool { return exists(patient) && exists(forever) },
			time.Until(taintedAt.Add(14*time.Second)), 500*time.Millisecond).Should(BeTrue())
	})

	It("marks a node that never reports Unknown after the startup grace period", func() {
		register("anchor", nil)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName("silent")}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed()) })
		created := time.Now()
		Eventually(func(g Gomega) {
			ready := readyOf(getNode(g, node.Name))
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(corev1.ConditionUnknown))
			g.Expect(ready.Reason).To(Equal("NodeStatusNeverUpdated"))
		}, 15*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(time.Since(created)).To(BeNumerically(">=", (startupGrace-1)*time.Second))
	})

	It("taints the nodes of a zone in partial outage at the secondary rate, not all at once", func() {
		zone := func(z string) map[string]string { return map[string]string{corev1.LabelTopologyZone: z} }
		all := []*corev1.Node{register("other-zone", zone(prefix+"b"))}
		var down []string
		for i := range 4 {
			n := register(fmt.Sprintf("z%d", i), zone(prefix+"a"))
			all = append(all, n)
			if i > 0 {
				down = append(down, n.Name)
			}
		}
		// The controller has seen every node Ready (it lifted the API server's not-ready
		// taint) and classified both zones Normal.
		Eventually(func(g Gomega) {
			for _, n := range all {
				g.Expect(taintKeys(getNode(g, n.Name), corev1.TaintEffectNoSchedule)).NotTo(ContainElement(corev1.TaintNodeNotReady))
				g.Expect(controller.ZoneStateOf(n)).To(Equal("Normal"))
			}
		}).Should(Succeed())

		var mu sync.Mutex
		tainted := map[string]time.Time{}
		kubelet.setAlive(false, down...)
		Eventually(func(g Gomega) {
			for _, name := range down {
				n := getNode(g, name)
				for _, t := range n.Spec.Taints {
					if t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute {
						mu.Lock()
						if _, seen := tainted[name]; !seen {
							tainted[name] = time.Now()
						}
						mu.Unlock()
					}
				}
			}
			g.Expect(tainted).To(HaveLen(3))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

		var times []time.Time
		for _, t := range tainted {
			times = append(times, t)
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		gaps := []time.Duration{times[1].Sub(times[0]), times[2].Sub(times[1])}
		AddReportEntry("gaps between the NoExecute taints of 3 nodes", fmt.Sprint(gaps))
		// At 0.5 nodes/s the taints come 2s apart; at the primary 10/s, 0.1s. The first may
		// come at the primary rate: the controller observes heartbeats when it reconciles,
		// so one node can be judged silent a monitor period before the others, while its zone
		// is still Normal (upstream behaves alike). From the zone's partial disruption on, the
		// secondary rate holds, so at least one gap is a secondary-rate token.
		Expect(max(gaps[0], gaps[1])).To(BeNumerically(">=", 1500*time.Millisecond))

		By("upstream's node_collector metrics: zone a 4 nodes, 3 of them down and tainted; zone b healthy, its evictions at 0")
		a, b := topology.GetZoneKey(all[1]), topology.GetZoneKey(all[0])
		Eventually(func(g Gomega) {
			c := readCollector(g)
			g.Expect(c.zoneSize).To(HaveKeyWithValue(a, 4.0))
			g.Expect(c.unhealthy).To(HaveKeyWithValue(a, 3.0))
			g.Expect(c.zoneHealth).To(HaveKeyWithValue(a, 25.0))
			g.Expect(c.evictions).To(HaveKeyWithValue(a, BeNumerically(">=", 3)))
			g.Expect(c.zoneSize).To(HaveKeyWithValue(b, 1.0))
			g.Expect(c.unhealthy).To(HaveKeyWithValue(b, 0.0))
			g.Expect(c.zoneHealth).To(HaveKeyWithValue(b, 100.0))
			g.Expect(c.evictions).To(HaveKeyWithValue(b, 0.0))
			g.Expect(c.nodeUpdates).To(BeNumerically(">", 0))
			g.Expect(c.allUpdates).To(BeNumerically(">", 0))
		}).Should(Succeed())
	})
})
