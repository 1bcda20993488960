package podcertificaterequestcleaner_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newPCR creates a request as a kubelet makes it, with a stub PKCS#10 request signed by a
// fresh key.
func newPCR(ctx context.Context) *certificatesv1.PodCertificateRequest {
	GinkgoHelper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	Expect(err).NotTo(HaveOccurred())
	podUID := types.UID("pod-uid-1")
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(ctx, "pcr"), GenerateName: "pcr-"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:           "example.com/test",
			PodName:              "pod",
			PodUID:               podUID,
			ServiceAccountName:   "default",
			ServiceAccountUID:    "sa-uid-1",
			NodeName:             "node",
			NodeUID:              "node-uid-1",
			MaxExpirationSeconds: ptr.To[int32](86400),
			StubPKCS10Request:    stub,
		},
	}
	Expect(env.Client.Create(ctx, pcr)).To(Succeed())
	return pcr
}

// touch changes the request without changing its age, so that it is judged again, and
// returns the version written.
func touch(ctx context.Context, pcr *certificatesv1.PodCertificateRequest) string {
	GinkgoHelper()
	patch := client.MergeFrom(pcr.DeepCopy())
	pcr.Annotations = map[string]string{"touched": time.Now().String()}
	Expect(env.Client.Patch(ctx, pcr, patch)).To(Succeed())
	return pcr.ResourceVersion
}

func gone(ctx context.Context, pcr *certificatesv1.PodCertificateRequest) func() error {
	return func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pcr), &certificatesv1.PodCertificateRequest{})
	}
}

var _ = Describe("podcertificaterequest-cleaner-controller", func() {
	AfterEach(func() { clk.Set(0) })

	It("keeps a request younger than 15 minutes and deletes it after", func(ctx SpecContext) {
		pcr := newPCR(ctx)
		// Judged at 14 minutes (the sync's read is the witness) ...
		clk.Set(14 * time.Minute)
		kept := touch(ctx, pcr)
		Eventually(func() string { return rec.LastRead(pcr.Name) }).Should(Equal(kept))

		// ... and at 16: a request's syncs never overlap, so the only deletion being of the
		// version judged at 16 means the request was kept at 14.
		clk.Set(16 * time.Minute)
		removed := touch(ctx, pcr)
		Eventually(gone(ctx, pcr)).Should(Satisfy(apierrors.IsNotFound))
		Expect(rec.Deletions(pcr.Name)).To(Equal([]string{removed}))
	})

	It("comes back at the threshold by itself", func(ctx SpecContext) {
		pcr := newPCR(ctx)
		clk.Set(15*time.Minute - 2*time.Second)
		kept := touch(ctx, pcr)
		Eventually(func() string { return rec.LastRead(pcr.Name) }).Should(Equal(kept))
		Eventually(gone(ctx, pcr)).Should(Satisfy(apierrors.IsNotFound))
		Expect(rec.Deletions(pcr.Name)).To(Equal([]string{kept}))
	})
})
