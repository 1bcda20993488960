package garbagecollector_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/testenv"
)

// discoveryPeriod replaces upstream's 30 s, so that a CRD installed during a spec is
// watched within a second or two.
const discoveryPeriod = time.Second

// suiteFlags configure the suite's manager as kcm's command line would: the workload
// controllers run beside the collector, at the default client rates.
var suiteFlags = []string{
	"--controllers=deployment-controller,replicaset-controller",
	"--leader-elect=false",
	"--secure-port=0",
}

var (
	env     *testenv.Env
	stopMgr context.CancelFunc
	mgrDone chan error
)

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
	opts := options.New()
	Expect(opts.Parse(suiteFlags)).To(Succeed())
	cfg := manager.RESTConfig(env.Config, opts)
	mgr, err := manager.New(cfg, opts, func(o *ctrlmanager.Options) {
		o.Controller.SkipNameValidation = ptr.To(true)
	})
	Expect(err).NotTo(HaveOccurred())
	cctx := &controller.Context{Manager: mgr, Options: opts, Config: cfg}
	sel, err := controller.Select(controller.Registry(), opts.Controllers)
	Expect(err).NotTo(HaveOccurred())
	_, err = controller.SetupEnabled(cctx, sel)
	Expect(err).NotTo(HaveOccurred())
	gc := &garbagecollector.Reconciler{
		Config: garbagecollector.ClientConfig(cfg, opts.KubeAPIQPS, int(opts.KubeAPIBurst),
			controller.UserAgent(garbagecollector.ClientName)),
		Recorder:        cctx.Recorder(garbagecollector.ControllerName),
		DiscoveryPeriod: discoveryPeriod,
	}
	Expect(gc.SetupWithManager(mgr, opts.Workers("concurrent-gc-syncs", garbagecollector.DefaultWorkers))).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	stopMgr, mgrDone = cancel, make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	Expect(mgr.GetCache().WaitForCacheSync(syncCtx)).To(BeTrue())
}

func stopSuiteManager() {
	if stopMgr != nil {
		stopMgr()
		Expect(<-mgrDone).To(Succeed())
		stopMgr = nil
	}
}
