package resourcequota_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/resourcequota"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestResourceQuotaController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "resourcequota-controller suite")
}

// The suite keeps the default --resource-quota-sync-period (5m), so that every recount the
// specs wait for comes from an event, never from the periodic resync; the resync spec
// restarts the manager with a short period.
var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		// The controller's logs, shown with a failed spec.
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	var err error
	env, err = testenv.Start([]string{resourcequota.ControllerName})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
