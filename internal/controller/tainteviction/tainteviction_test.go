package tainteviction_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keep holds deleted pods so that specs can read what they looked like; bound pods stay
// terminating anyway without a kubelet.
const keep = "example.com/keep"

var broken = corev1.Taint{Key: "example.com/broken", Value: "true", Effect: corev1.TaintEffectNoExecute}

var _ = Describe("taint-eviction-controller", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "te") })

	It("deletes a pod that does not tolerate a new NoExecute taint at once, marking it a disruption target first", func() {
		node := newNode(ctx)
		p := newPod(ctx, ns, "victim", node.Name)
		// The victim is seen untainted first: the taint is found through the node's watch.
		awaitQueueDrained(ctx, ns)
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": p.Name})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		start := time.Now()
		setTaints(ctx, node.Name, broken)
		// The first version of the pod that is being deleted already has the condition.
		var deleting *corev1.Pod
		timeout := time.After(10 * time.Second)
		for deleting == nil {
			select {
			case ev := <-w.ResultChan():
				if seen, ok := ev.Object.(*corev1.Pod); ok && seen.DeletionTimestamp != nil {
					deleting = seen
				}
			case <-timeout:
				Fail("the pod was not deleted within 10s of the taint")
			}
		}
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		Expect(deleting.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", corev1.DisruptionTarget),
			HaveField("Status", corev1.ConditionTrue),
			HaveField("Reason", "DeletionByTaintManager"),
			HaveField("Message", "Taint manager: deleting due to NoExecute taint"),
		)))
		Eventually(func(g Gomega) {
			g.Expect(evictionEvents(ctx, g, ns, "victim")).To(ContainElement(fmt.Sprintf("Marking for deletion Pod %s/victim", ns)))
		}).Should(Succeed())

		release(ctx, p)
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}))
		}).Should(BeTrue())
	})

	It("deletes a pod bound to a node already tainted, and leaves alone pods on other nodes, counting the deletion in upstream's metrics", func() {
		deleted, latency := podDeletions(Default)
		tainted := newNode(ctx, broken)
		// The same key as NoSchedule: it does not evict.
		other := newNode(ctx, corev1.Taint{Key: broken.Key, Value: broken.Value, Effect: corev1.TaintEffectNoSchedule})
		victim := newPod(ctx, ns, "victim", tainted.Name)
		bystander := newPod(ctx, ns, "bystander", other.Name)
		Eventually(func(g Gomega) { g.Expect(deleting(ctx, g, victim)).To(BeTrue()) }).
			WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			got := get(ctx, g, bystander)
			g.Expect(got.DeletionTimestamp).To(BeNil())
			g.Expect(got.Status.Conditions).To(BeEmpty())
		}).WithTimeout(2 * time.Second).Should(Succeed())
		Expect(evictionEvents(ctx, Default, ns, "bystander")).To(BeEmpty())

		// The victim's deletion, due at once, observed within 2.5s, as every deletion since the spec began.
		total, h := podDeletions(Default)
		Expect(total).To(BeNumerically(">", deleted))
		Expect(h.GetSampleCount()).To(BeNumerically("==", total), "one observation per deletion")
		Expect(h.GetSampleCount() - latency.GetSampleCount()).To(Equal(h.GetBucket()[5].GetCumulativeCount() - latency.GetBucket()[5].GetCumulativeCount()))
	})

	DescribeTable("deletes a pod tolerating the taint for 2s no sooner than 2s after the taint",
		func(taint corev1.Taint) {
			node := newNode(ctx)
			p := newPod(ctx, ns, "tolerating", node.Name, corev1.Toleration{
				Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](2),
			})
			start := time.Now()
			setTaints(ctx, node.Name, taint)
			Eventually(func(g Gomega) { g.Expect(deleting(ctx, g, p)).To(BeTrue()) }).
				WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
			elapsed := time.Since(start)
			By(fmt.Sprintf("deleted %v after the taint", elapsed))
			Expect(elapsed).To(BeNumerically(">=", 2*time.Second))
			Expect(elapsed).To(BeNumerically("<", 6*time.Second))
			Expect(get(ctx, Default, p).Status.Conditions).To(ContainElement(HaveField("Reason", "DeletionByTaintManager")))
			Eventually(func(g Gomega) {
				g.Expect(evictionEvents(ctx, g, ns, "tolerating")).To(Equal([]string{fmt.Sprintf("Marking for deletion Pod %s/tolerating", ns)}))
			}).Should(Succeed())
		},
		Entry("a taint of its own", broken),
		Entry("node.kubernetes.io/unreachable, with the pod's own tolerationSeconds",
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}),
	)

	It("keeps a pod that tolerates every NoExecute taint forever", func() {
		node := newNode(ctx)
		forever := newPod(ctx, ns, "forever", node.Name, corev1.Toleration{Key: broken.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
		// A pod on the same node that does not tolerate the taint shows the controller acted on it.
		control := newPod(ctx, ns, "control", node.Name)
		setTaints(ctx, node.Name, broken)
		Eventually(func(g Gomega) { g.Expect(deleting(ctx, g, control)).To(BeTrue()) }).Should(Succeed())
		Consistently(func(g Gomega) {
			got := get(ctx, g, forever)
			g.Expect(got.DeletionTimestamp).To(BeNil())
			g.Expect(got.Status.Conditions).To(BeEmpty())
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(evictionEvents(ctx, Default, ns, "forever")).To(BeEmpty())
	})

	It("cancels the eviction when the taint goes away within the toleration window", func() {
		node := newNode(ctx)
		p := newPod(ctx, ns, "spared", node.Name, corev1.Toleration{
			Key: broken.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](4),
		})
		start := time.Now()
		setTaints(ctx, node.Name, broken)
		// The controller has scheduled the eviction before the taint goes.
		Eventually(func() bool { return controller.Scheduled(client.ObjectKeyFromObject(p)) }).Should(BeTrue())
		setTaints(ctx, node.Name)
		cancelled := fmt.Sprintf("Cancelling deletion of Pod %s/spared", ns)
		Eventually(func(g Gomega) {
			g.Expect(evictionEvents(ctx, g, ns, "spared")).To(Equal([]string{cancelled}))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		// Past the end of the window, with a margin.
		Consistently(func(g Gomega) {
			g.Expect(deleting(ctx, g, p)).To(BeFalse())
		}).WithTimeout(time.Until(start.Add(6 * time.Second))).Should(Succeed())
		Expect(get(ctx, Default, p).Status.Conditions).To(BeEmpty())
		Expect(evictionEvents(ctx, Default, ns, "spared")).To(Equal([]string{cancelled}))
	})
})

// awaitQueueDrained waits until the controller has handled the pods created before: it
// deletes a canary pod on a node tainted from the start, queued after them.
func awaitQueueDrained(ctx context.Context, ns string) {
	canary := newPod(ctx, ns, "canary", newNode(ctx, broken).Name)
	Eventually(func(g Gomega) { g.Expect(deleting(ctx, g, canary)).To(BeTrue()) }).Should(Succeed())
}

func newNode(ctx context.Context, taints ...corev1.Taint) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "te-node-"}, Spec: corev1.NodeSpec{Taints: taints}}
	Expect(env.Client.Create(ctx, node)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed()) })
	return node
}

// newPod creates a pod bound to the node, held by the keep finalizer until the spec ends.
func newPod(ctx context.Context, ns, name, nodeName string, tolerations ...corev1.Toleration) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{keep}},
		Spec: corev1.PodSpec{
			NodeName:    nodeName,
			Tolerations: tolerations,
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	DeferCleanup(func() { release(ctx, p) })
	return p
}

// release removes the keep finalizer and deletes the pod for good.
func release(ctx context.Context, p *corev1.Pod) {
	Eventually(func() error {
		cur := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		cur.Finalizers = nil
		if err := env.Client.Update(ctx, cur); err != nil {
			return err
		}
		return client.IgnoreNotFound(env.Client.Delete(ctx, cur, client.GracePeriodSeconds(0)))
	}).Should(Succeed())
}

func setTaints(ctx context.Context, nodeName string, taints ...corev1.Taint) {
	Eventually(func() error {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
			return err
		}
		node.Spec.Taints = taints
		return env.Client.Update(ctx, node)
	}).Should(Succeed())
}

func get(ctx context.Context, g Gomega, p *corev1.Pod) *corev1.Pod {
	cur := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
	return cur
}

// deleting reports whether the pod is being deleted (or gone).
func deleting(ctx context.Context, g Gomega, p *corev1.Pod) bool {
	cur := &corev1.Pod{}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur)
	if apierrors.IsNotFound(err) {
		return true
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cur.DeletionTimestamp != nil
}

// evictionEvents returns the notes of the controller's Events about the pod, oldest first.
func evictionEvents(ctx context.Context, g Gomega, ns, pod string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind != "Pod" || e.Regarding.Name != pod {
			continue
		}
		g.Expect(e.ReportingController).To(Equal("taint-eviction-controller"))
		g.Expect(e.Reason).To(Equal("TaintManagerEviction"))
		g.Expect(e.Type).To(Equal(corev1.EventTypeNormal))
		notes = append(notes, e.Note)
	}
	return notes
}
