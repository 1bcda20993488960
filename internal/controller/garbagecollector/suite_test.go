package garbagecollector_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/testenv"
)

// discoveryPeriod replaces upstream's 30 s, so that a CRD installed during a spec is
// watched within a second or two.
const discoveryPeriod = time.Second

// suiteFlags configure the suite's manager as kcm's command line would: the workload
// controllers run beside the collector, at the default client rates.
var suiteFlags = []string{
	"--controllers=deployment-controller,replicaset-controller",
}

var env *testenv.Env

func TestGarbageCollector(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "garbage-collector-controller suite")
}

var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		// The controllers' logs, shown with a failed spec.
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	var err error
	env, err = testenv.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	startSuiteManager()
})

var _ = AfterSuite(func() {
	stopSuiteManager()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// startSuiteManager wires a manager as main does, through the registry for the workload
// controllers, and sets the collector up as setup_garbagecollector.go does but with a
// short discovery period.
func startSuiteManager() {
	Expect(env.StartManagerWith(suiteFlags, func(cctx *controller.Context) error {
		sel, err := controller.Select(controller.Registry(), cctx.Options.Controllers)
		if err != nil {
			return err
		}
		if _, err := controller.SetupEnabled(cctx, sel); err != nil {
			return err
		}
		opts := cctx.Options
		gc := &garbagecollector.Reconciler{
			Config: garbagecollector.ClientConfig(cctx.Config, opts.KubeAPIQPS, int(opts.KubeAPIBurst),
				controller.UserAgent(garbagecollector.ClientName)),
			Recorder:        cctx.Recorder(garbagecollector.ControllerName),
			DiscoveryPeriod: discoveryPeriod,
		}
		return gc.SetupWithManager(cctx.Manager, opts.Workers("concurrent-gc-syncs", garbagecollector.DefaultWorkers))
	})).To(Succeed())
}

func stopSuiteManager() {
	Expect(env.StopManager()).To(Succeed())
}
