package ttl_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/ttl"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestTTLController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ttl-controller suite")
}

var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		// The controller's logs, shown with a failed spec.
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	// A higher client rate than the default 20 QPS keeps a boundary crossing (one patch per
	// node) short.
	env, err = testenv.Start([]string{ttl.ControllerName}, "--kube-api-qps=200", "--kube-api-burst=300")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
