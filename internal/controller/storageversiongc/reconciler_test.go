package storageversiongc_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("storageversion-garbage-collector-controller", func() {
	It("removes the entries of an API server without a Lease, keeps the live one's, and deletes a StorageVersion left empty", func(ctx SpecContext) {
		live := liveServer(ctx)
		storageVersion(ctx, "gc.kcm.test.widgets", entry(live, "gc.kcm.test/v1"), entry("apiserver-ghost", "gc.kcm.test/v2"))
		storageVersion(ctx, "gc.kcm.test.gizmos", entry("apiserver-ghost", "gc.kcm.test/v1"))

		Eventually(func(g Gomega) {
			sv := &apiserverinternalv1alpha1.StorageVersion{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "gc.kcm.test.widgets"}, sv)).To(Succeed())
			g.Expect(sv.Status.StorageVersions).To(ConsistOf(HaveField("APIServerID", live)))
			g.Expect(sv.Status.CommonEncodingVersion).To(HaveValue(Equal("gc.kcm.test/v1")), "recomputed once the entries agree")
			g.Expect(sv.Status.Conditions).To(ConsistOf(And(
				HaveField("Type", apiserverinternalv1alpha1.AllEncodingVersionsEqual),
				HaveField("Status", apiserverinternalv1alpha1.ConditionTrue),
				HaveField("Reason", "CommonEncodingVersionSet"))))
		}).Should(Succeed())
		Eventually(gone(ctx, "gc.kcm.test.gizmos")).Should(BeTrue())

		By("the API server's own StorageVersions keep its entry")
		Expect(servers(Default, ctx, "apps.deployments")).To(ContainElement(live))
	})

	It("removes a deleted Lease's API server from every StorageVersion", func(ctx SpecContext) {
		live := liveServer(ctx)
		lease := identityLease(ctx, "apiserver-doomed")
		storageVersion(ctx, "gc.kcm.test.sprockets", entry(live, "gc.kcm.test/v1"), entry(lease.Name, "gc.kcm.test/v1"),
			entry("apiserver-phantom", "gc.kcm.test/v1"))
		storageVersion(ctx, "gc.kcm.test.cogs", entry(lease.Name, "gc.kcm.test/v1"))

		By("while its Lease exists, its entries stay (the phantom's, without one, go)")
		Eventually(func(g Gomega) []string { return servers(g, ctx, "gc.kcm.test.sprockets") }).
			Should(ConsistOf(live, lease.Name))
		Consistently(func(g Gomega) []string { return servers(g, ctx, "gc.kcm.test.cogs") }).
			Should(ConsistOf(lease.Name))

		By("its Lease deleted, its entries go, and the StorageVersion it alone recorded")
		Expect(env.Client.Delete(ctx, lease)).To(Succeed())
		Eventually(func(g Gomega) []string { return servers(g, ctx, "gc.kcm.test.sprockets") }).
			Should(ConsistOf(live))
		Eventually(gone(ctx, "gc.kcm.test.cogs")).Should(BeTrue())
	})
})
