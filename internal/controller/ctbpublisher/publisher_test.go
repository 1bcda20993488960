package ctbpublisher_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/ctbpublisher"
)

var _ = Describe("kube-apiserver-serving-clustertrustbundle-publisher-controller", Ordered, func() {
	var name string
	BeforeAll(func() {
		name = ctbpublisher.BundleName(ctbpublisher.SignerName, servingCA)
	})

	published := func(g Gomega) *certificatesv1.ClusterTrustBundle {
		ctb := &certificatesv1.ClusterTrustBundle{}
		g.Expect(env.Client.Get(ctx(), client.ObjectKey{Name: name}, ctb)).To(Succeed())
		g.Expect(ctb.Spec.SignerName).To(Equal(ctbpublisher.SignerName))
		g.Expect(ctb.Spec.TrustBundle).To(Equal(servingCA))
		return ctb
	}
	signersBundles := func(g Gomega) []string {
		var list certificatesv1.ClusterTrustBundleList
		g.Expect(env.Client.List(ctx(), &list)).To(Succeed())
		var names []string
		for _, ctb := range list.Items {
			if ctb.Spec.SignerName == ctbpublisher.SignerName {
				names = append(names, ctb.Name)
			}
		}
		return names
	}

	It("publishes --root-ca-file as the signer's only bundle, under upstream's name", func() {
		Expect(name).To(HavePrefix("kubernetes.io:kube-apiserver-serving:"))
		Eventually(published).Should(Not(BeNil()))
		Expect(signersBundles(Default)).To(ConsistOf(name))
	})

	It("restores an edited bundle", func() {
		ctb := published(Default)
		ctb.Spec.TrustBundle = newCA("someone else's CA")
		Expect(env.Client.Update(ctx(), ctb)).To(Succeed())
		Eventually(published).Should(Not(BeNil()))
	})

	It("recreates a deleted bundle", func() {
		ctb := published(Default)
		Expect(env.Client.Delete(ctx(), ctb)).To(Succeed())
		Eventually(func(g Gomega) types.UID { return published(g).UID }).ShouldNot(Equal(ctb.UID))
	})

	It("deletes the signer's other bundles and leaves other signers' alone", func() {
		other := &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: "example.com:other:x"},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/other", TrustBundle: newCA("other signer")},
		}
		Expect(env.Client.Create(ctx(), other)).To(Succeed())
		stale := &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: "kubernetes.io:kube-apiserver-serving:earlier"},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: ctbpublisher.SignerName, TrustBundle: newCA("earlier CA")},
		}
		Expect(env.Client.Create(ctx(), stale)).To(Succeed())

		Eventually(func() error {
			return env.Client.Get(ctx(), client.ObjectKeyFromObject(stale), &certificatesv1.ClusterTrustBundle{})
		}).Should(Satisfy(apierrors.IsNotFound))
		Expect(signersBundles(Default)).To(ConsistOf(name))
		Consistently(func() error {
			return env.Client.Get(ctx(), client.ObjectKeyFromObject(other), &certificatesv1.ClusterTrustBundle{})
		}).Should(Succeed())
	})
})
