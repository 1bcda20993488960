package storageversiongc_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/storageversiongc"
)

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
