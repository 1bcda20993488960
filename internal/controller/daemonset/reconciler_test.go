package daemonset_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func nodeName(prefix string) string { return prefix + "-" + rand.String(6) }

var _ = Describe("daemonset-controller", func() {
	var (
		ctx  context.Context
		ns   string
		pool map[string]string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = env.Namespace(ctx, "ds")
		pool = newPool()
	})

	It("follows a changing node set: add, relabel, NoSchedule taint, removal", func() {
		n1, n2 := createNode(ctx, nodeName("a"), pool), createNode(ctx, nodeName("b"), pool)
		ds := newDaemonSet(ns, "agent", pool)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())

		By("creating one pod per eligible node, pinned by metadata.name affinity, with the default tolerations")
		Eventually(func(g Gomega) {
			byNode := podsByNode(ctx, g, ns)
			g.Expect(byNode).To(HaveLen(2))
			g.Expect(byNode[n1.Name]).To(HaveLen(1))
			g.Expect(byNode[n2.Name]).To(HaveLen(1))
		}).Should(Succeed())
		p := livePods(ctx, Default, ns)[0]
		Expect(p.Spec.NodeName).To(BeEmpty(), "the scheduler binds it")
		Expect(p.Labels).To(HaveKey(appsv1.DefaultDaemonSetUniqueLabelKey))
		Expect(p.Labels).To(HaveKeyWithValue("pod-template-generation", "1"))
		Expect(p.Spec.Tolerations).To(ContainElements(
			corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			corev1.Toleration{Key: "node.kubernetes.io/unschedulable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		))
		Expect(metav1.IsControlledBy(&p, getDaemonSet(ctx, Default, ds))).To(BeTrue())

		By("adding a node")
		n3 := createNode(ctx, nodeName("c"), pool)
		Eventually(func(g Gomega) { g.Expect(podsByNode(ctx, g, ns)[n3.Name]).To(HaveLen(1)) }).Should(Succeed())

		By("relabelling a node so the selector no longer matches")
		updateNode(ctx, n1.Name, func(n *corev1.Node) { n.Labels = map[string]string{"pool": "elsewhere"} })
		Eventually(func(g Gomega) { g.Expect(podsByNode(ctx, g, ns)).NotTo(HaveKey(n1.Name)) }).Should(Succeed())

		By("tainting a node NoSchedule: its pod stays, a new tainted node gets none")
		taint := corev1.Taint{Key: "example.com/dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
		updateNode(ctx, n2.Name, func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} })
		n4 := createNode(ctx, nodeName("d"), pool, taint)
		Consistently(func(g Gomega) {
			byNode := podsByNode(ctx, g, ns)
			g.Expect(byNode[n2.Name]).To(HaveLen(1))
			g.Expect(byNode).NotTo(HaveKey(n4.Name))
		}, "2s", "200ms").Should(Succeed())

		By("tainting it NoExecute: its pod is evicted")
		updateNode(ctx, n2.Name, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "example.com/dedicated", Value: "x", Effect: corev1.TaintEffectNoExecute}}
		})
		Eventually(func(g Gomega) { g.Expect(podsByNode(ctx, g, ns)).NotTo(HaveKey(n2.Name)) }).Should(Succeed())

		By("removing a node: its unscheduled pod goes")
		Expect(env.Client.Delete(ctx, n3)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(podsByNode(ctx, g, ns)).To(BeEmpty()) }).Should(Succeed())

		Eventually(func(g Gomega) {
			got := getDaemonSet(ctx, g, ds)
			g.Expect(got.Status.DesiredNumberScheduled).To(BeZero())
			g.Expect(got.Status.NumberMisscheduled).To(BeZero())
		}).Should(Succeed())

		By("reporting SuccessfulCreate and SuccessfulDelete Events")
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			reasons := map[string]bool{}
			for _, e := range events.Items {
				reasons[e.Reason] = true
			}
			g.Expect(reasons).To(HaveKey("SuccessfulCreate"))
			g.Expect(reasons).To(HaveKey("SuccessfulDelete"))
		}).Should(Succeed())
	})

	It("reports status counts as pods are bound and become ready", func() {
		createNode(ctx, nodeName("s"), pool)
		createNode(ctx, nodeName("s"), pool)
		ds := newDaemonSet(ns, "counted", pool)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			s := getDaemonSet(ctx, g, ds).Status
			g.Expect(s.DesiredNumberScheduled).To(BeEquivalentTo(2))
			g.Expect(s.CurrentNumberScheduled).To(BeEquivalentTo(2))
			g.Expect(s.UpdatedNumberScheduled).To(BeEquivalentTo(2))
			g.Expect(s.NumberReady).To(BeZero())
			g.Expect(s.NumberUnavailable).To(BeEquivalentTo(2))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			got := getDaemonSet(ctx, g, ds)
			s := got.Status
			g.Expect(s.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(s.DesiredNumberScheduled).To(BeEquivalentTo(2))
			g.Expect(s.CurrentNumberScheduled).To(BeEquivalentTo(2))
			g.Expect(s.NumberReady).To(BeEquivalentTo(2))
			g.Expect(s.NumberAvailable).To(BeEquivalentTo(2))
			g.Expect(s.UpdatedNumberScheduled).To(BeEquivalentTo(2))
			g.Expect(s.NumberUnavailable).To(BeZero())
			g.Expect(s.NumberMisscheduled).To(BeZero())
		}).Should(Succeed())
	})

	It("replaces a failed pod", func() {
		node := createNode(ctx, nodeName("f"), pool)
		ds := newDaemonSet(ns, "phoenix", pool)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		var first corev1.Pod
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))
			first = pods[0]
		}).Should(Succeed())
		first.Status.Phase = corev1.PodFailed
		first.Status.Conditions = nil
		Expect(env.Client.Status().Update(ctx, &first)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].UID).NotTo(Equal(first.UID))
			g.Expect(target(&pods[0])).To(Equal(node.Name))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range events.Items {
				reasons = append(reasons, e.Reason)
			}
			g.Expect(reasons).To(ContainElement("FailedDaemonPod"))
		}).Should(Succeed())
	})

	It("replaces a pod that succeeded, with a SucceededDaemonPod Event", func() {
		node := createNode(ctx, nodeName("s"), pool)
		ds := newDaemonSet(ns, "oneshot", pool)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		var first corev1.Pod
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))
			first = pods[0]
		}).Should(Succeed())
		By("the kubelet reporting the pod Succeeded (a graceful node shutdown, a container that exited 0)")
		first.Status.Phase = corev1.PodSucceeded
		first.Status.Conditions = nil
		Expect(env.Client.Status().Update(ctx, &first)).To(Succeed())
		Eventually(func(g Gomega) {
			// The kubelet finishes the graceful deletion.
			kubelet(ctx, ns, false)
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].UID).NotTo(Equal(first.UID))
			g.Expect(target(&pods[0])).To(Equal(node.Name))
			gone := &corev1.Pod{}
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(&first), gone))).To(BeTrue(), "the succeeded pod is not deleted")
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var seen []string
			for _, e := range events.Items {
				seen = append(seen, e.Type+" "+e.Reason+" "+e.Note)
			}
			g.Expect(seen).To(ContainElement(fmt.Sprintf("Normal SucceededDaemonPod Found succeeded daemon pod %s/%s on node %s, will try to delete it",
				ns, first.Name, node.Name)))
		}).Should(Succeed())
	})

	It("rolls out with maxSurge=1: the new pod runs beside the old until it is ready", func() {
		createNode(ctx, nodeName("r"), pool)
		createNode(ctx, nodeName("r"), pool)
		ds := newDaemonSet(ns, "surge", pool)
		rollingUpdate(ds, 0, 1)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			g.Expect(getDaemonSet(ctx, g, ds).Status.NumberAvailable).To(BeEquivalentTo(2))
		}).Should(Succeed())

		setImage(ctx, ds, "registry.k8s.io/pause:3.9")
		By("surging one new pod while both old pods stay")
		var surged string
		Eventually(func(g Gomega) {
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				if p.Spec.Containers[0].Image == "registry.k8s.io/pause:3.9" {
					surged = target(&p)
				}
			}
			g.Expect(surged).NotTo(BeEmpty())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(livePods(ctx, g, ns)).To(HaveLen(3), "no second surge, no deletion before the new pod is ready")
		}, "1s", "100ms").Should(Succeed())

		By("deleting the old pods once their replacements are ready")
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			pods := livePods(ctx, g, ns)
			g.Expect(len(pods)).To(BeNumerically("<=", 3))
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"))
			}
			g.Expect(getDaemonSet(ctx, g, ds).Status.UpdatedNumberScheduled).To(BeEquivalentTo(2))
		}).Should(Succeed())
	})

	It("rolls out with maxUnavailable=1: never more than one node without a ready pod", func() {
		nodes := []string{}
		for range 3 {
			nodes = append(nodes, createNode(ctx, nodeName("u"), pool).Name)
		}
		ds := newDaemonSet(ns, "careful", pool)
		rollingUpdate(ds, 1, 0)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			g.Expect(getDaemonSet(ctx, g, ds).Status.NumberAvailable).To(BeEquivalentTo(3))
		}).Should(Succeed())

		setImage(ctx, ds, "registry.k8s.io/pause:3.9")
		// Play the kubelet until the rollout is done, checking the invariant at every step.
		Eventually(func(g Gomega) {
			readyOn := map[string]bool{}
			updated := 0
			live := livePods(ctx, Default, ns)
			var seen []string
			for _, p := range live {
				seen = append(seen, fmt.Sprintf("%s node=%s/%s image=%s phase=%s", p.Name, p.Spec.NodeName, target(&p), p.Spec.Containers[0].Image, p.Status.Phase))
			}
			for _, p := range live {
				if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
					readyOn[p.Spec.NodeName] = true
				}
				if p.Spec.Containers[0].Image == "registry.k8s.io/pause:3.9" && p.Status.Phase == corev1.PodRunning {
					updated++
				}
			}
			without := 0
			for _, n := range nodes {
				if !readyOn[n] {
					without++
				}
			}
			if without > 1 {
				StopTrying(fmt.Sprintf("%d nodes without a ready pod: %v", without, seen)).Now()
			}
			if updated == 3 {
				return
			}
			kubelet(ctx, ns, true)
			g.Expect(updated).To(Equal(3), "rollout did not finish")
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("with OnDelete leaves old pods until they are deleted", func() {
		createNode(ctx, nodeName("o"), pool)
		ds := newDaemonSet(ns, "manual", pool)
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			g.Expect(getDaemonSet(ctx, g, ds).Status.NumberAvailable).To(BeEquivalentTo(1))
		}).Should(Succeed())
		setImage(ctx, ds, "registry.k8s.io/pause:3.9")
		Consistently(func(g Gomega) {
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10"))
		}, "1s", "200ms").Should(Succeed())
		old := livePods(ctx, Default, ns)[0]
		Expect(env.Client.Delete(ctx, &old, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			pods := livePods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"))
		}).Should(Succeed())
	})
})
