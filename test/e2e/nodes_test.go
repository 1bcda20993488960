//go:build e2e && linux

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("A node that dies", func() {
	const (
		doomed = "kwok-node-doomed"
		// doomedNodes is the annotation value of the doomed node's own kwok process.
		doomedNodes = "doomed"
	)

	It("is tainted unreachable, and its Deployment pods are evicted and replaced on live nodes", func(ctx SpecContext) {
		ns := newNamespace(ctx)

		By("running a fourth node under a kwok process of its own")
		doomedKWOK := startKWOK("kwok-doomed", doomedNodes)
		createNode(ctx, doomed, doomedNodes)
		DeferCleanup(func(ctx SpecContext) {
			// Nothing finishes the evicted pods' deletion on a dead node: force it, then remove the node.
			pods := &corev1.PodList{}
			Expect(cl.List(ctx, pods, client.MatchingFields{"spec.nodeName": doomed})).To(Succeed())
			for i := range pods.Items {
				Expect(client.IgnoreNotFound(cl.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
			}
			Expect(client.IgnoreNotFound(cl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: doomed}}))).To(Succeed())
		})
		waitNodeSchedulable(ctx, doomed)

		By("running a Deployment that prefers the doomed node and tolerates unreachable for 5s")
		d := newDeployment(ns, "survivor", 3)
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{doomed},
				}}},
			}},
		}}
		d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{
			Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5),
		}}
		Expect(cl.Create(ctx, d)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "survivor", 3)
		labels := map[string]string{"app": "survivor"}
		var onDoomed []string
		Eventually(ctx, func(g Gomega) {
			onDoomed = nil
			for _, p := range livePods(g, ns, labels) {
				if p.Spec.NodeName == doomed {
					onDoomed = append(onDoomed, p.Name)
				}
			}
			g.Expect(onDoomed).NotTo(BeEmpty(), "pods on %s", doomed)
		}).WithTimeout(30*time.Second).Should(Succeed(), "logs in %s", logDir)
		GinkgoWriter.Printf("pods on %s: %v\n", doomed, onDoomed)

		By("killing the doomed node's kwok: its Lease is no longer renewed")
		killedAt := time.Now()
		doomedKWOK.Kill()

		Eventually(ctx, func(g Gomega) {
			node := &corev1.Node{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: doomed}, node)).To(Succeed())
			g.Expect(node.Spec.Taints).To(ContainElement(And(
				HaveField("Key", corev1.TaintNodeUnreachable),
				HaveField("Effect", corev1.TaintEffectNoExecute),
			)))
		}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "unreachable taint on %s; logs in %s", doomed, logDir)
		GinkgoWriter.Printf("%s tainted unreachable %s after its kwok died\n", doomed, time.Since(killedAt).Round(time.Second))

		Eventually(ctx, func(g Gomega) {
			for _, name := range onDoomed {
				p := &corev1.Pod{}
				err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
				if err == nil {
					g.Expect(p.DeletionTimestamp).NotTo(BeNil(), "pod %s evicted", name)
				} else {
					g.Expect(client.IgnoreNotFound(err)).To(Succeed())
				}
			}
			pods := livePods(g, ns, labels)
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s scheduled", p.Name)
				g.Expect(p.Spec.NodeName).NotTo(Equal(doomed), "pod %s node", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s phase", p.Name)
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "pods replaced on live nodes; logs in %s", logDir)
		waitDeploymentComplete(ctx, ns, "survivor", 3)
		GinkgoWriter.Printf("pods replaced %s after the kwok died\n", time.Since(killedAt).Round(time.Second))
	})
})
