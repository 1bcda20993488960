package serviceaccounttoken_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/serviceaccounttoken"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// key signs the suite's tokens; keyFlag passes it to the manager.
	key     *rsa.PrivateKey
	keyFlag string
)

func TestServiceAccountTokenController(t *testing.T) {
	testenv.RunSuite(t, "serviceaccount-token-controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	key, err = rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "sa.key")
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	Expect(os.WriteFile(path, pem.EncodeToMemory(block), 0o600)).To(Succeed())
	keyFlag = "--service-account-private-key-file=" + path

	env = testenv.MustStart([]string{serviceaccounttoken.ControllerName}, keyFlag)
})
