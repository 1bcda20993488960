package serviceaccounttoken_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	RegisterFailHandler(Fail)
	RunSpecs(t, "serviceaccount-token-controller suite")
}

var _ = BeforeSuite(func() {
	// Generous: the machine is shared; nothing here asserts speed.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	key, err = rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "sa.key")
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	Expect(os.WriteFile(path, pem.EncodeToMemory(block), 0o600)).To(Succeed())
	keyFlag = "--service-account-private-key-file=" + path

	env, err = testenv.Start([]string{serviceaccounttoken.ControllerName}, keyFlag)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
