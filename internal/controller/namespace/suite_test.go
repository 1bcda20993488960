package namespace_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestNamespaceController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "namespace-controller suite")
}

// The controller runs at the default client rates (--kube-api-qps=20, --kube-api-burst=30,
// raised 20 and 100 times as upstream does), so the timing spec measures what a default
// kcm does.
var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		// The controller's logs, shown with a failed spec.
		ctrllog.SetLogger(GinkgoLogr)
	}
	// A namespace is first processed 5s after its deletion, as upstream: allow for that and
	// a loaded machine.
	SetDefaultEventuallyTimeout(45 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	var err error
	env, err = testenv.Start([]string{"namespace-controller"})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
