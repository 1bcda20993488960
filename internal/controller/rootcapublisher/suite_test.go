package rootcapublisher_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/rootcapublisher"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// publishedCA is the bundle given with --root-ca-file: the API server's CA plus nothing
	// else, read from a file so the suite proves the flag is honoured.
	publishedCA []byte
)

func TestRootCAPublisher(t *testing.T) {
	testenv.RunSuite(t, "root-ca-certificate-publisher-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	// A bundle distinct from the kubeconfig's CA: the API server's CA twice.
	publishedCA = append(append([]byte{}, env.Config.CAData...), env.Config.CAData...)
	caFile := filepath.Join(GinkgoT().TempDir(), "ca.crt")
	Expect(os.WriteFile(caFile, publishedCA, 0o600)).To(Succeed())
	Expect(env.StartManager([]string{rootcapublisher.ControllerName}, "--root-ca-file="+caFile)).To(Succeed())
})
