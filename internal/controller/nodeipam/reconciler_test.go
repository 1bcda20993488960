package nodeipam_test

import (
	"context"
	"fmt"
	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/nodeipam"
	"github.com/kcm/kcm/internal/controller/ttl"
	"github.com/kcm/kcm/internal/testenv"
)

var dualStack = []string{"--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16,fd00::/48",
	"--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"}

func deleteNode(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

// allocated waits until every named node has podCIDRs and returns them by node.
func allocated(ctx context.Context, names ...string) map[string][]string {
	GinkgoHelper()
	got := map[string][]string{}
	Eventually(func(g Gomega) {
		for _, name := range names {
			n := &corev1.Node{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
			g.Expect(n.Spec.PodCIDRs).NotTo(BeEmpty(), "node %s has no podCIDRs", name)
			g.Expect(n.Spec.PodCIDR).To(Equal(n.Spec.PodCIDRs[0]))
			got[name] = n.Spec.PodCIDRs
		}
	}).Should(Succeed())
	return got
}

// expectDistinctIn checks that each node has one CIDR of each cluster CIDR, in their order,
// and that no CIDR is held twice.
func expectDistinctIn(got map[string][]string, clusterCIDRs ...string) {
	GinkgoHelper()
	seen := map[string]string{}
	for name, cidrs := range got {
		Expect(cidrs).To(HaveLen(len(clusterCIDRs)), "node %s", name)
		for i, c := range cidrs {
			_, cluster, _ := net.ParseCIDR(clusterCIDRs[i])
			ip, _, err := net.ParseCIDR(c)
			Expect(err).NotTo(HaveOccurred())
			Expect(cluster.Contains(ip)).To(BeTrue(), "node %s: %s outside %s", name, c, cluster)
			Expect(seen).NotTo(HaveKey(c), "%s handed to %s and %s", c, seen[c], name)
			seen[c] = name
		}
	}
}

func deleteAllNodes(ctx context.Context) {
	Expect(env.Client.DeleteAllOf(ctx, &corev1.Node{})).To(Succeed())
	Eventually(func(g Gomega) {
		nodes := &corev1.NodeList{}
		g.Expect(env.Client.List(ctx, nodes)).To(Succeed())
		g.Expect(nodes.Items).To(BeEmpty())
	}).Should(Succeed())
}

var _ = Describe("node-ipam-controller", Ordered, func() {
	AfterEach(func(ctx SpecContext) {
		Expect(env.StopManager()).To(Succeed())
		deleteAllNodes(ctx)
	})

	It("gives each node one CIDR of each family, distinct, outside the service range, and never changes them", func(ctx SpecContext) {
		Expect(env.StartManager([]string{nodeipam.ControllerName},
			append(dualStack, "--service-cluster-ip-range=10.244.0.0/24,fd00::/108")...)).To(Succeed())
		names := []string{"a", "b", "c", "d", "e"}
		for _, n := range names {
			env.Node(ctx, n)
		}
		got := allocated(ctx, names...)
		expectDistinctIn(got, "10.244.0.0/16", "fd00::/48")
		for name, cidrs := range got {
			Expect(cidrs).NotTo(ContainElement("10.244.0.0/24"), "node %s got the service range's block", name)
			Expect(cidrs).NotTo(ContainElement("fd00::/64"), "node %s got the service range's block", name)
		}

		// A node given CIDRs by someone else keeps them.
		env.Node(ctx, "preset", testenv.NodePodCIDRs("10.244.200.0/24", "fd00:0:0:c8::/64"))
		// Touching a node makes it reconciled again: its CIDRs stay.
		n := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "a"}, n)).To(Succeed())
		n.Labels = map[string]string{"touched": "yes"}
		Expect(env.Client.Update(ctx, n)).To(Succeed())
		env.Node(ctx, "f")
		after := allocated(ctx, append(names, "preset", "f")...)
		Expect(after["preset"]).To(Equal([]string{"10.244.200.0/24", "fd00:0:0:c8::/64"}))
		Expect(after["a"]).To(Equal(got["a"]))
		expectDistinctIn(after, "10.244.0.0/16", "fd00::/48")
	})

	It("reports itself in running_managed_controllers while it runs, as upstream's RunWithMetrics", func(ctx SpecContext) {
		running := map[string]string{"name": "nodeipam", "manager": "kube-controller-manager"}
		Expect(env.StartManager([]string{nodeipam.ControllerName}, dualStack...)).To(Succeed())
		// Witness that the controller runs: it gives a node its CIDRs.
		env.Node(ctx, "running")
		allocated(ctx, "running")
		Expect(testenv.Sample("running_managed_controllers", running)).To(Equal(1.0))
		Expect(testenv.LabelNames("running_managed_controllers")).To(Equal([]string{"manager", "name"}))
		Expect(env.StopManager()).To(Succeed())
		Expect(testenv.Sample("running_managed_controllers", running)).To(Equal(0.0))
	})

	It("re-uses a deleted node's CIDRs and reports an exhausted range with upstream's Event", func(ctx SpecContext) {
		// The unit tests of the same binary count under these labels too: the spec reads deltas.
		before := map[string]cidrSetMetrics{}
		for _, cidr := range []string{"10.0.0.0/30", "fd00::/127"} {
			before[cidr] = readCIDRSet(Default, cidr)
		}
		// Two node CIDRs per family.
		Expect(env.StartManager([]string{nodeipam.ControllerName}, "--allocate-node-cidrs=true",
			"--cluster-cidr=10.0.0.0/30,fd00::/127", "--node-cidr-mask-size-ipv4=31", "--node-cidr-mask-size-ipv6=128")).To(Succeed())
		env.Node(ctx, "one")
		env.Node(ctx, "two")
		got := allocated(ctx, "one", "two")
		expectDistinctIn(got, "10.0.0.0/30", "fd00::/127")

		full := env.Node(ctx, "three")
		env.ExpectEvent(ctx, full, testenv.Event{Type: corev1.EventTypeNormal, Reason: "CIDRNotAvailable",
			Message: "Node three status is now: CIDRNotAvailable", ReportingController: "cidrAllocator"})
		n := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "three"}, n)).To(Succeed())
		Expect(n.Spec.PodCIDRs).To(BeEmpty())

		// One goes: the node waiting gets its CIDRs on its next retry.
		deleteNode(ctx, "one")
		again := allocated(ctx, "three")
		Expect(again["three"]).To(Equal(got["one"]))

		By("upstream's cidrset metrics of each cluster CIDR: at least 3 allocations and 1 release, 2 of 2 in use")
		// A CIDR allocated for a node whose write fails is released and allocated again, as
		// upstream: the counts may exceed the nodes', their difference is what is in use.
		for _, cidr := range []string{"10.0.0.0/30", "fd00::/127"} {
			Eventually(func(g Gomega) {
				m, was := readCIDRSet(g, cidr), before[cidr]
				allocations := m.values["node_ipam_controller_cidrset_cidrs_allocations_total"] - was.values["node_ipam_controller_cidrset_cidrs_allocations_total"]
				releases := m.values["node_ipam_controller_cidrset_cidrs_releases_total"] - was.values["node_ipam_controller_cidrset_cidrs_releases_total"]
				g.Expect(allocations).To(BeNumerically(">=", 3), cidr)
				g.Expect(releases).To(BeNumerically(">=", 1), cidr)
				g.Expect(allocations-releases).To(Equal(2.0), cidr)
				g.Expect(m.values).To(HaveKeyWithValue("node_ipam_controller_cirdset_max_cidrs", 2.0), cidr)
				g.Expect(m.values).To(HaveKeyWithValue("node_ipam_controller_cidrset_usage_cidrs", 1.0), cidr)
				g.Expect(m.tries-was.tries).To(BeNumerically(">=", 3), cidr)
			}).Should(Succeed())
		}
	})

	It("after a restart hands out no CIDR that a node already has", func(ctx SpecContext) {
		Expect(env.StartManager([]string{nodeipam.ControllerName}, dualStack...)).To(Succeed())
		var before, after []string
		for i := range 20 {
			before = append(before, fmt.Sprintf("old-%d", i))
			env.Node(ctx, before[i])
		}
		allocated(ctx, before...)
		Expect(env.StopManager()).To(Succeed())

		// While kcm is down, nodes join; one of the old ones goes.
		for i := range 20 {
			after = append(after, fmt.Sprintf("new-%d", i))
			env.Node(ctx, after[i])
		}
		deleteNode(ctx, "old-0")
		Expect(env.StartManager([]string{nodeipam.ControllerName}, dualStack...)).To(Succeed())
		got := allocated(ctx, append(before[1:], after...)...)
		expectDistinctIn(got, "10.244.0.0/16", "fd00::/48")
	})

	It("refuses to start when a node's CIDR lies outside the cluster CIDRs, and with the cloud allocator", func(ctx SpecContext) {
		env.Node(ctx, "elsewhere", testenv.NodePodCIDRs("10.1.2.0/24"))
		err := env.StartManager([]string{nodeipam.ControllerName}, "--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16")
		Expect(err).To(MatchError("setting up node-ipam-controller: failed to mark cidr[10.1.2.0/24] at idx [0] as occupied for node: elsewhere: cidr 10.1.2.0/24 is out the range of cluster cidr 10.244.0.0/16"))

		err = env.StartManager([]string{nodeipam.ControllerName}, "--allocate-node-cidrs=true",
			"--cidr-allocator-type=CloudAllocator", "--cluster-cidr=10.244.0.0/16")
		Expect(err).To(MatchError("setting up node-ipam-controller: --cidr-allocator-type is set to 'CloudAllocator' but cloud provider is not configured"))

		// The witness: with the node's CIDR inside the cluster CIDR it starts.
		Expect(env.StartManager([]string{nodeipam.ControllerName}, "--allocate-node-cidrs=true", "--cluster-cidr=10.0.0.0/8")).To(Succeed())
		env.Node(ctx, "inside")
		Expect(allocated(ctx, "inside")["inside"]).NotTo(Equal([]string{"10.1.2.0/24"}))
	})

	It("does nothing without --allocate-node-cidrs", func(ctx SpecContext) {
		// ttl-controller runs alongside as the witness that the node was seen.
		Expect(env.StartManager([]string{nodeipam.ControllerName, ttl.ControllerName}, "--cluster-cidr=10.244.0.0/16")).To(Succeed())
		env.Node(ctx, "idle")
		Eventually(func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "idle"}, n)).To(Succeed())
			g.Expect(n.Annotations).To(HaveKey(corev1.ObjectTTLAnnotationKey))
			g.Expect(n.Spec.PodCIDRs).To(BeEmpty())
		}).Should(Succeed())
	})
})
