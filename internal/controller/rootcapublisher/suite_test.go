package rootcapublisher_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// publishedCA is the bundle given with --root-ca-file: the API server's CA plus nothing
	// else, read from a file so the suite proves the flag is honoured.
	publishedCA []byte
)

func TestRootCAPublisher(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "root-ca-certificate-publisher-controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	// A bundle distinct from the kubeconfig's CA: the API server's CA twice.
	publishedCA = append(append([]byte{}, env.Config.CAData...), env.Config.CAData...)
	caFile := filepath.Join(GinkgoT().TempDir(), "ca.crt")
	Expect(os.WriteFile(caFile, publishedCA, 0o600)).To(Succeed())
	Expect(env.StartManager([]string{"root-ca-certificate-publisher-controller"}, "--root-ca-file="+caFile)).To(Succeed())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
