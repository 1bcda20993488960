package ttl_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

// createNodes creates nodes [from, to), with annotations when given.
func createNodes(ctx context.Context, from, to int, annotations map[int]string) {
	for i := from; i < to; i++ {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}
		if v, ok := annotations[i]; ok {
			n.Annotations = map[string]string{corev1.ObjectTTLAnnotationKey: v}
		}
		Expect(env.Client.Create(ctx, n)).To(Succeed())
	}
}

// deleteNodes deletes nodes [from, to) and waits until the controller's cache has seen it.
func deleteNodes(ctx context.Context, from, to int) {
	for i := from; i < to; i++ {
		Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}})).To(Succeed())
	}
	Eventually(func(g Gomega) {
		cached := &corev1.NodeList{}
		g.Expect(env.Manager.GetClient().List(ctx, cached)).To(Succeed())
		g.Expect(cached.Items).To(HaveLen(from))
	}).Should(Succeed())
}

// expectTTL checks that the cluster has n nodes, all annotated with ttl.
func expectTTL(g Gomega, n int, ttl string) {
	nodes := &corev1.NodeList{}
	g.Expect(env.Client.List(context.Background(), nodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(n))
	for _, node := range nodes.Items {
		g.Expect(node.Annotations).To(HaveKeyWithValue(corev1.ObjectTTLAnnotationKey, ttl), node.Name)
	}
}

// The specs walk one cluster through upstream's first boundary, in order.
var _ = Describe("ttl-controller", Ordered, func() {
	ctx := context.Background()

	It("annotates every node of a cluster of 100 nodes with 0, leaving a node already right unchanged", func() {
		// node-000 is already right, node-001 unreadable, node-002 wrong.
		createNodes(ctx, 0, 100, map[int]string{0: "0", 1: "soon", 2: "15"})
		right := &corev1.Node{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Name: nodeName(0)}, right)).To(Succeed())

		Eventually(func(g Gomega) { expectTTL(g, 100, "0") }).Should(Succeed())
		Consistently(func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(right), n)).To(Succeed())
			g.Expect(n.ResourceVersion).To(Equal(right.ResourceVersion), "a node already right was written")
		}).Should(Succeed())
	})

	It("annotates every node with 15 once the cluster grows past 100 nodes", func() {
		createNodes(ctx, 100, 101, nil)
		Eventually(func(g Gomega) { expectTTL(g, 101, "15") }).Should(Succeed())
	})

	It("keeps 15 while the cluster shrinks back to 90 nodes", func() {
		deleteNodes(ctx, 90, 101)
		// An update queues a node: it must still get 15. Its annotation removed, the node
		// is the witness that the controller runs and still chooses 15.
		touched := &corev1.Node{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Name: nodeName(0)}, touched)).To(Succeed())
		touched.Labels = map[string]string{"touched": "true"}
		delete(touched.Annotations, corev1.ObjectTTLAnnotationKey)
		Expect(env.Client.Update(ctx, touched)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(touched), touched)).To(Succeed())
			g.Expect(touched.Annotations).To(HaveKeyWithValue(corev1.ObjectTTLAnnotationKey, "15"))
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectTTL(g, 90, "15") }, 3*time.Second).Should(Succeed())
	})

	It("annotates every node with 0 again below 90 nodes", func() {
		deleteNodes(ctx, 89, 90)
		Eventually(func(g Gomega) { expectTTL(g, 89, "0") }).Should(Succeed())
	})
})
