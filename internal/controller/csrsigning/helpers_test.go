package csrsigning_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testCA is a CA written to files, as --cluster-signing-* flags name them.
type testCA struct {
	cert              *x509.Certificate
	certFile, keyFile string
	certPEM, keyPEM   []byte
}

// newCA makes a self-signed CA valid until notAfter and writes it into dir (ca.crt, ca.key).
func newCA(dir, name string, notAfter time.Time) *testCA {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	crt, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	Expect(err).NotTo(HaveOccurred())
	ca := &testCA{cert: crt, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM,
		certFile: filepath.Join(dir, "ca.crt"), keyFile: filepath.Join(dir, "ca.key")}
	ca.writeTo(ca.certFile, ca.keyFile)
	return ca
}

// writeTo replaces the files as rotation tools do: written aside, then renamed into place,
// so that a reader never sees half a file.
func (ca *testCA) writeTo(certFile, keyFile string) {
	GinkgoHelper()
	for path, data := range map[string][]byte{certFile: ca.certPEM, keyFile: ca.keyPEM} {
		tmp := path + ".tmp"
		Expect(os.WriteFile(tmp, data, 0o600)).To(Succeed())
		Expect(os.Rename(tmp, path)).To(Succeed())
	}
}

// verify checks that certPEM chains to the CA for usage, and returns it.
func (ca *testCA) verify(certPEM []byte, usage x509.ExtKeyUsage) *x509.Certificate {
	GinkgoHelper()
	block, _ := pem.Decode(certPEM)
	Expect(block).NotTo(BeNil())
	crt, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	_, err = crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
	Expect(err).NotTo(HaveOccurred())
	return crt
}

// request is a CSR as a client makes it: a fresh key and a signed request for subject.
type request struct {
	subject    pkix.Name
	dnsNames   []string
	signer     string
	usages     []certificatesv1.KeyUsage
	expiration *int32
}

// create submits the request and returns the object created.
func (r request) create(ctx context.Context) *certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: r.subject, DNSNames: r.dnsNames}, key)
	Expect(err).NotTo(HaveOccurred())
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        r.signer,
			Usages:            r.usages,
			ExpirationSeconds: r.expiration,
		},
	}
	Expect(env.Client.Create(ctx, csr)).To(Succeed())
	return csr
}

// decide approves or denies the request through the approval subresource, as an
// administrator (kubectl certificate approve/deny).
func decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	GinkgoHelper()
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(csr), csr)).To(Succeed())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: "ByTheTest", Message: "decided by the test",
	})
	Expect(env.Client.SubResource("approval").Update(ctx, csr)).To(Succeed())
}

// issued waits for the request's certificate and returns it.
func issued(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) []byte {
	GinkgoHelper()
	got := &certificatesv1.CertificateSigningRequest{}
	Eventually(func(g Gomega) []byte {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(csr), got)).To(Succeed())
		return got.Status.Certificate
	}).ShouldNot(BeEmpty())
	return got.Status.Certificate
}

// get reads the request as the API server has it.
func get(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	got := &certificatesv1.CertificateSigningRequest{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(csr), got)).To(Succeed())
	return got
}
