package ctbpublisher_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kcm/kcm/internal/controller/ctbpublisher"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// servingCA is the bundle given with --root-ca-file, distinct from the kubeconfig's CA so
	// that the suite proves the flag is what gets published.
	servingCA string
)

func TestClusterTrustBundlePublisher(t *testing.T) {
	testenv.RunSuite(t, "kube-apiserver-serving-clustertrustbundle-publisher-controller suite")
}

var _ = BeforeSuite(func() {
	// certificates.k8s.io/v1 ClusterTrustBundles are GA in v1.37 and served by default
	// (the ClusterTrustBundle gate is on), so the API server needs no flag.
	env = testenv.MustStartAPIServer()
	servingCA = newCA("suite serving CA")
	caFile := filepath.Join(GinkgoT().TempDir(), "ca.crt")
	Expect(os.WriteFile(caFile, []byte(servingCA), 0o600)).To(Succeed())
	Expect(env.StartManager([]string{ctbpublisher.ControllerName}, "--root-ca-file="+caFile)).To(Succeed())
})

// newCA is a PEM self-signed CA certificate.
func newCA(name string) string {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	Expect(err).NotTo(HaveOccurred())
	pem, err := certutil.EncodeCertificates(cert)
	Expect(err).NotTo(HaveOccurred())
	return string(pem)
}

// ctx is the context of API calls made from matchers.
func ctx() context.Context { return context.Background() }
