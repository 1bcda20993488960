package job_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/testenv"
)

// The suite's pod failure backoff starts at 1s (upstream: 10s) and is capped at 2s
// (upstream: 10m); pod events are batched for 100ms (upstream: 1s).
const (
	podBackoff    = time.Second
	maxPodBackoff = 2 * time.Second
	batchPeriod   = 100 * time.Millisecond
)

// suiteFlags configure the manager as kcm's command line would.
var suiteFlags = []string{
	"--controllers=" + job.ControllerName,
	"--leader-elect=false",
	"--secure-port=0",
	"--kube-api-qps=200",
	"--kube-api-burst=300",
}

var (
	env     *testenv.Env
	stopMgr context.CancelFunc
	mgrDone chan error
)

func TestJobController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "job-controller suite")
}

var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
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

// startSuiteManager wires a manager as testenv.StartManager and the registry's setupJob
// do, except for the backoff and batch period, which only the Reconciler's fields shorten.
func startSuiteManager() {
	opts := options.New()
	Expect(opts.Parse(suiteFlags)).To(Succeed())
	cfg := manager.RESTConfig(env.Config, opts)
	mgr, err := manager.New(cfg, opts, func(o *ctrlmanager.Options) {
		o.Controller.SkipNameValidation = ptr.To(true)
	})
	Expect(err).NotTo(HaveOccurred())
	cctx := &controller.Context{Manager: mgr, Options: opts, Config: cfg}
	Expect(cctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf)).To(Succeed())
	cl, err := cctx.Client("job-controller")
	Expect(err).NotTo(HaveOccurred())
	r := &job.Reconciler{
		Client:               cl,
		APIReader:            mgr.GetAPIReader(),
		Recorder:             cctx.Recorder(job.ControllerName),
		PodFailureBackoff:    podBackoff,
		MaxPodFailureBackoff: maxPodBackoff,
		BatchPeriod:          batchPeriod,
	}
	Expect(r.SetupWithManager(mgr, cctx.Workers("concurrent-job-syncs", 5))).To(Succeed())

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
