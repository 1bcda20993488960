package storageversiongc_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller/storageversiongc"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestStorageVersionGCController(t *testing.T) {
	testenv.RunSuite(t, "storageversion-garbage-collector-controller suite")
}

// gates turns on the storage version API; the API server then records its own storage
// versions under its identity Lease, which the specs use as the live API server.
const gates = "StorageVersionAPI=true,APIServerIdentity=true"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(func(te *envtest.Environment) {
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("feature-gates", gates)
		args.Set("runtime-config", "internal.apiserver.k8s.io/v1alpha1=true")
	})
	Expect(env.StartManager([]string{storageversiongc.ControllerName}, "--feature-gates="+gates)).To(Succeed())
})

// liveServer is the ID of the API server the suite runs: the one whose entries the API server
// itself wrote, with an identity Lease.
func liveServer(ctx context.Context) string {
	GinkgoHelper()
	var id string
	Eventually(func(g Gomega) {
		leases := &coordinationv1.LeaseList{}
		g.Expect(env.Client.List(ctx, leases, client.InNamespace(metav1.NamespaceSystem),
			client.MatchingLabels{storageversiongc.IdentityLabel: storageversiongc.KubeAPIServer})).To(Succeed())
		g.Expect(leases.Items).To(HaveLen(1))
		id = leases.Items[0].Name
		sv := &apiserverinternalv1alpha1.StorageVersion{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "apps.deployments"}, sv)).To(Succeed())
		g.Expect(sv.Status.StorageVersions).To(ContainElement(HaveField("APIServerID", id)))
	}).Should(Succeed())
	return id
}

func entry(id, encoding string) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: encoding, DecodableVersions: []string{encoding}}
}

// storageVersion creates a StorageVersion of a resource no API server serves (so that only
// the controller writes it) with the given entries, written as an API server writes them.
func storageVersion(ctx context.Context, name string, entries ...apiserverinternalv1alpha1.ServerStorageVersion) *apiserverinternalv1alpha1.StorageVersion {
	GinkgoHelper()
	sv := &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(env.Client.Create(ctx, sv)).To(Succeed())
	sv.Status.StorageVersions = entries
	common := entries[0].EncodingVersion
	for _, e := range entries {
		if e.EncodingVersion != common {
			common = ""
		}
	}
	if common != "" {
		sv.Status.CommonEncodingVersion = ptr.To(common)
	}
	Expect(env.Client.Status().Update(ctx, sv)).To(Succeed())
	return sv
}

// identityLease creates a kube-apiserver identity Lease for a fabricated API server.
func identityLease(ctx context.Context, id string) *coordinationv1.Lease {
	GinkgoHelper()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: id,
			Labels: map[string]string{storageversiongc.IdentityLabel: storageversiongc.KubeAPIServer}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}
	Expect(env.Client.Create(ctx, lease)).To(Succeed())
	return lease
}

func servers(g Gomega, ctx context.Context, name string) []string {
	sv := &apiserverinternalv1alpha1.StorageVersion{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, sv)).To(Succeed())
	var ids []string
	for _, e := range sv.Status.StorageVersions {
		ids = append(ids, e.APIServerID)
	}
	return ids
}

func gone(ctx context.Context, name string) func() bool {
	return func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &apiserverinternalv1alpha1.StorageVersion{})
		return apierrors.IsNotFound(err)
	}
}

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
