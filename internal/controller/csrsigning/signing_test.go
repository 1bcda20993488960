package csrsigning_test

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/controller/csrsigning"
	"github.com/kcm/kcm/internal/setup"
)

var (
	nodeSubject   = pkix.Name{CommonName: "system:node:worker-1", Organization: []string{"system:nodes"}}
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

// signingDuration is the suite's --cluster-signing-duration.
const signingDuration = 100 * time.Hour

var _ = Describe("the shared signing pair", Ordered, func() {
	var ca *testCA
	// loops are the signers' Reconcilers as Setup built them, to watch their CA.
	loops := map[string]*csrsigning.Reconciler{}

	BeforeAll(func() {
		ca = newCA(GinkgoT().TempDir(), "shared-ca", time.Now().Add(10*365*24*time.Hour))
		Expect(env.StartManagerWith([]string{csrsigning.ControllerName}, []string{
			"--cluster-signing-cert-file=" + ca.certFile, "--cluster-signing-key-file=" + ca.keyFile,
			"--cluster-signing-duration=" + signingDuration.String(),
		}, setup.OverrideFor(csrsigning.ControllerName, func(r *csrsigning.Reconciler) { loops[r.SignerName] = r }))).To(Succeed())
		DeferCleanup(env.StopManager)
		Expect(loops).To(HaveLen(4))
	})

	It("issues an approved client certificate that verifies against the CA, for --cluster-signing-duration", func(ctx SpecContext) {
		csr := request{subject: pkix.Name{CommonName: "alice", Organization: []string{"devs"}}, signer: csrsigning.KubeAPIServerClient, usages: clientUsages}.create(ctx)
		approvedAt := time.Now()
		decide(ctx, csr, certificatesv1.CertificateApproved)
		certPEM := issued(ctx, csr)
		GinkgoWriter.Printf("approval to issued certificate: %v\n", time.Since(approvedAt))

		crt := ca.verify(certPEM, x509.ExtKeyUsageClientAuth)
		Expect(crt.Subject.CommonName).To(Equal("alice"))
		Expect(crt.Subject.Organization).To(Equal([]string{"devs"}))
		Expect(crt.KeyUsage).To(Equal(x509.KeyUsageDigitalSignature))
		Expect(crt.ExtKeyUsage).To(Equal([]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}))
		// 100h is long: backdated 5 minutes at both ends.
		Expect(crt.NotAfter.Sub(crt.NotBefore)).To(Equal(signingDuration))
		Expect(crt.NotBefore).To(BeTemporally("~", approvedAt.Add(-5*time.Minute), 30*time.Second))
		Expect(get(ctx, csr).Status.Conditions).NotTo(ContainElement(HaveField("Type", certificatesv1.CertificateFailed)))
	})

	It("honours a shorter spec.expirationSeconds, caps a longer one at the flag and raises a tiny one to 10 minutes", func(ctx SpecContext) {
		lifetime := func(seconds int32) time.Duration {
			csr := request{subject: nodeSubject, signer: csrsigning.KubeAPIServerClientKubelet, usages: clientUsages, expiration: ptr.To(seconds)}.create(ctx)
			decide(ctx, csr, certificatesv1.CertificateApproved)
			crt := ca.verify(issued(ctx, csr), x509.ExtKeyUsageClientAuth)
			return crt.NotAfter.Sub(crt.NotBefore)
		}
		// Under 8 hours only NotBefore is backdated.
		Expect(lifetime(3600)).To(Equal(time.Hour + 5*time.Minute))
		Expect(lifetime(int32((1000 * time.Hour).Seconds()))).To(Equal(signingDuration))
		Expect(lifetime(600)).To(Equal(15 * time.Minute))
	})

	It("issues kubelet serving certificates with the request's names", func(ctx SpecContext) {
		csr := request{subject: nodeSubject, dnsNames: []string{"worker-1.example"}, signer: csrsigning.KubeletServing, usages: servingUsages}.create(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved)
		crt := ca.verify(issued(ctx, csr), x509.ExtKeyUsageServerAuth)
		Expect(crt.DNSNames).To(Equal([]string{"worker-1.example"}))
		Expect(crt.VerifyHostname("worker-1.example")).To(Succeed())
	})

	DescribeTable("fails a kubelet client request the signer refuses, with upstream's reason",
		func(ctx SpecContext, subject pkix.Name, usages []certificatesv1.KeyUsage, message string) {
			csr := request{subject: subject, signer: csrsigning.KubeAPIServerClientKubelet, usages: usages}.create(ctx)
			decide(ctx, csr, certificatesv1.CertificateApproved)
			Eventually(func() []certificatesv1.CertificateSigningRequestCondition {
				return get(ctx, csr).Status.Conditions
			}).Should(ContainElement(And(
				HaveField("Type", certificatesv1.CertificateFailed),
				HaveField("Status", corev1.ConditionTrue),
				HaveField("Reason", csrsigning.SignerValidationFailure),
				HaveField("Message", message),
			)))
			Expect(get(ctx, csr).Status.Certificate).To(BeEmpty())
		},
		Entry("server auth", nodeSubject, servingUsages, "usages did not match [client auth digital signature key encipherment]"),
		Entry("another organization", pkix.Name{CommonName: "system:node:worker-1", Organization: []string{"system:masters"}}, clientUsages, "subject organization is not system:nodes"),
	)

	It("signs neither a denied nor a pending request, and signs the pending one once approved", func(ctx SpecContext) {
		denied := request{subject: nodeSubject, signer: csrsigning.KubeAPIServerClientKubelet, usages: clientUsages}.create(ctx)
		decide(ctx, denied, certificatesv1.CertificateDenied)
		pending := request{subject: nodeSubject, signer: csrsigning.KubeAPIServerClientKubelet, usages: clientUsages}.create(ctx)
		// The witness: a request approved after both, for the same signer, is issued.
		witness := request{subject: nodeSubject, signer: csrsigning.KubeAPIServerClientKubelet, usages: clientUsages}.create(ctx)
		decide(ctx, witness, certificatesv1.CertificateApproved)
		issued(ctx, witness)
		Expect(get(ctx, denied).Status.Certificate).To(BeEmpty())
		Expect(get(ctx, pending).Status.Certificate).To(BeEmpty())

		decide(ctx, pending, certificatesv1.CertificateApproved)
		ca.verify(issued(ctx, pending), x509.ExtKeyUsageClientAuth)
		Expect(get(ctx, denied).Status.Certificate).To(BeEmpty())
	})

	It("signs with a CA rewritten on disk", func(ctx SpecContext) {
		rotated := newCA(GinkgoT().TempDir(), "rotated-ca", time.Now().Add(365*24*time.Hour))
		rotated.writeTo(ca.certFile, ca.keyFile)
		// The files are watched: wait until the signer has read the new CA.
		Eventually(func(g Gomega) {
			crt, _, err := loops[csrsigning.KubeAPIServerClient].CA.Current()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(crt.Raw).To(Equal(rotated.cert.Raw))
		}).Should(Succeed())

		csr := request{subject: pkix.Name{CommonName: "bob"}, signer: csrsigning.KubeAPIServerClient, usages: clientUsages}.create(ctx)
		decide(ctx, csr, certificatesv1.CertificateApproved)
		certPEM := issued(ctx, csr)
		crt := rotated.verify(certPEM, x509.ExtKeyUsageClientAuth)
		Expect(bytes.Equal(crt.RawIssuer, ca.cert.RawSubject)).To(BeFalse())
		Expect(crt.Issuer.CommonName).To(Equal("rotated-ca"))
	})
})

var _ = Describe("per-signer pairs", Ordered, func() {
	var serving, client *testCA

	BeforeAll(func() {
		serving = newCA(GinkgoT().TempDir(), "serving-ca", time.Now().Add(24*time.Hour))
		client = newCA(GinkgoT().TempDir(), "client-ca", time.Now().Add(24*time.Hour))
		Expect(env.StartManager([]string{csrsigning.ControllerName},
			"--cluster-signing-kubelet-serving-cert-file="+serving.certFile, "--cluster-signing-kubelet-serving-key-file="+serving.keyFile,
			"--cluster-signing-kube-apiserver-client-cert-file="+client.certFile, "--cluster-signing-kube-apiserver-client-key-file="+client.keyFile,
		)).To(Succeed())
		DeferCleanup(env.StopManager)
	})

	It("signs each signer's requests with its own CA, and not those of a signer given no pair", func(ctx SpecContext) {
		kubeletClient := request{subject: nodeSubject, signer: csrsigning.KubeAPIServerClientKubelet, usages: clientUsages}.create(ctx)
		decide(ctx, kubeletClient, certificatesv1.CertificateApproved)

		servingCSR := request{subject: nodeSubject, dnsNames: []string{"worker-1"}, signer: csrsigning.KubeletServing, usages: servingUsages}.create(ctx)
		decide(ctx, servingCSR, certificatesv1.CertificateApproved)
		serving.verify(issued(ctx, servingCSR), x509.ExtKeyUsageServerAuth)

		clientCSR := request{subject: pkix.Name{CommonName: "carol"}, signer: csrsigning.KubeAPIServerClient, usages: clientUsages}.create(ctx)
		decide(ctx, clientCSR, certificatesv1.CertificateApproved)
		crt := client.verify(issued(ctx, clientCSR), x509.ExtKeyUsageClientAuth)
		// 24h asked (the default year) is capped at the CA's own expiry.
		Expect(crt.NotAfter).To(Equal(client.cert.NotAfter))

		// The kubelet client request was approved before both others were issued.
		Expect(get(ctx, kubeletClient).Status.Certificate).To(BeEmpty())
	})
})

var _ = Describe("startup", func() {
	It("refuses the shared pair together with per-signer pairs, as upstream", func() {
		ca := newCA(GinkgoT().TempDir(), "ca", time.Now().Add(time.Hour))
		err := env.StartManager([]string{csrsigning.ControllerName},
			"--cluster-signing-cert-file="+ca.certFile, "--cluster-signing-key-file="+ca.keyFile,
			"--cluster-signing-legacy-unknown-cert-file="+ca.certFile, "--cluster-signing-legacy-unknown-key-file="+ca.keyFile)
		Expect(err).To(MatchError(ContainSubstring("cannot specify default and per controller certs at the same time")))
	})

	It("refuses half a per-signer pair, naming the signer", func() {
		ca := newCA(GinkgoT().TempDir(), "ca", time.Now().Add(time.Hour))
		err := env.StartManager([]string{csrsigning.ControllerName}, "--cluster-signing-kubelet-serving-cert-file="+ca.certFile)
		Expect(err).To(MatchError(ContainSubstring("failed to init kubernetes.io/kubelet-serving certificate controller: error reading CA cert file")))
	})

	It("refuses a pair whose key is not the certificate's", func() {
		ca := newCA(GinkgoT().TempDir(), "ca", time.Now().Add(time.Hour))
		other := newCA(GinkgoT().TempDir(), "other", time.Now().Add(time.Hour))
		err := env.StartManager([]string{csrsigning.ControllerName}, "--cluster-signing-cert-file="+ca.certFile, "--cluster-signing-key-file="+other.keyFile)
		Expect(err).To(MatchError(ContainSubstring("failed to init kubernetes.io/kubelet-serving certificate controller")))
	})
})
