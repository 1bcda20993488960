package csrcleaner_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newCSR creates a request as a client makes it.
func newCSR(ctx context.Context) *certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "test"}}, key)
	Expect(err).NotTo(HaveOccurred())
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "example.com/test",
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
		},
	}
	Expect(env.Client.Create(ctx, csr)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, csr))).To(Succeed()) })
	return csr
}

// decide adds a condition dated at through the approval subresource (Approved, Denied) or
// the status (Failed), as an approver or a signer does.
func decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType, at time.Time) {
	GinkgoHelper()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: "ByTheTest", LastUpdateTime: metav1.NewTime(at),
	})
	sub := "approval"
	if t == certificatesv1.CertificateFailed {
		sub = "status"
	}
	Expect(env.Client.SubResource(sub).Update(ctx, csr)).To(Succeed())
}

// issue sets a certificate expiring at notAfter, as a signer does.
func issue(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, notAfter time.Time) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	Expect(env.Client.SubResource("status").Update(ctx, csr)).To(Succeed())
}

// touch changes the request without changing its state, so that it is judged again, and
// returns the version written.
func touch(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) string {
	GinkgoHelper()
	patch := client.MergeFrom(csr.DeepCopy())
	csr.Annotations = map[string]string{"touched": time.Now().String()}
	Expect(env.Client.Patch(ctx, csr, patch)).To(Succeed())
	return csr.ResourceVersion
}

// keptThenDeleted checks that the cleaner keeps the request with its clock at keep and
// deletes it at remove: a sync reads the request as judged at keep (the witness), and the
// only deletion is of the version judged at remove (a request's syncs never overlap, so the
// sync at keep ended before).
func keptThenDeleted(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, keep, remove time.Duration) {
	GinkgoHelper()
	clk.Set(keep)
	DeferCleanup(func() { clk.Set(0) })
	kept := touch(ctx, csr)
	Eventually(func() string { return rec.LastRead(csr.Name) }).Should(Equal(kept))

	clk.Set(remove)
	removed := touch(ctx, csr)
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(csr), &certificatesv1.CertificateSigningRequest{})
	}).Should(Satisfy(apierrors.IsNotFound))
	Expect(rec.Deletions(csr.Name)).To(Equal([]string{removed}))
}

var _ = Describe("certificatesigningrequest-cleaner-controller", func() {
	It("deletes a pending request after a day", func(ctx SpecContext) {
		keptThenDeleted(ctx, newCSR(ctx), 23*time.Hour, 24*time.Hour+time.Minute)
	})

	It("deletes an issued request an hour after its approval", func(ctx SpecContext) {
		csr := newCSR(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved, time.Now().Add(-30*time.Minute))
		issue(ctx, csr, time.Now().Add(365*24*time.Hour))
		keptThenDeleted(ctx, csr, 25*time.Minute, 31*time.Minute)
	})

	It("deletes an issued request once its certificate expired", func(ctx SpecContext) {
		csr := newCSR(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved, time.Now())
		issue(ctx, csr, time.Now().Add(10*time.Minute))
		keptThenDeleted(ctx, csr, 9*time.Minute, 11*time.Minute)
	})

	It("comes back at the deadline by itself", func(ctx SpecContext) {
		csr := newCSR(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved, time.Now())
		issue(ctx, csr, time.Now().Add(2*time.Second))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(csr), csr)).To(Succeed())
		Eventually(func() string { return rec.LastRead(csr.Name) }).Should(Equal(csr.ResourceVersion))
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(csr), &certificatesv1.CertificateSigningRequest{})
		}).Should(Satisfy(apierrors.IsNotFound))
	})

	It("keeps an approved request never issued for a day, not an hour", func(ctx SpecContext) {
		csr := newCSR(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved, time.Now().Add(-30*time.Minute))
		keptThenDeleted(ctx, csr, 2*time.Hour, 24*time.Hour)
	})

	It("deletes a denied request an hour after the denial", func(ctx SpecContext) {
		csr := newCSR(ctx)
		decide(ctx, csr, certificatesv1.CertificateDenied, time.Now().Add(-30*time.Minute))
		keptThenDeleted(ctx, csr, 25*time.Minute, 31*time.Minute)
	})

	It("deletes a failed request an hour after the failure", func(ctx SpecContext) {
		csr := newCSR(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved, time.Now().Add(-2*time.Hour+time.Minute))
		decide(ctx, csr, certificatesv1.CertificateFailed, time.Now().Add(-30*time.Minute))
		keptThenDeleted(ctx, csr, 25*time.Minute, 31*time.Minute)
	})
})
