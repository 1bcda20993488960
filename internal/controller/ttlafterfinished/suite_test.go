package ttlafterfinished_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/ttlafterfinished"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestTTLAfterFinished(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ttl-after-finished-controller suite")
}

// The controller runs as kcm runs it, set up through the registry, with the real clock.
var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	var err error
	env, err = testenv.Start([]string{ttlafterfinished.ControllerName})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
