package cronjob_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/cronjob"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env     *testenv.Env
	clk     = &shiftedClock{}
	stopMgr context.CancelFunc
	mgrDone chan error
)

func TestCronJobController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cronjob-controller suite")
}

// shiftedClock is the real clock moved forward by an offset the specs increase: time passes
// as usual, so the controller's waits (RequeueAfter) are real, but a spec need not wait a
// minute for the next "* * * * *" run.
type shiftedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *shiftedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// jumpTo moves the clock forward so that it reads t now.
func (c *shiftedClock) jumpTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	offset := time.Until(t)
	Expect(offset).To(BeNumerically(">=", c.offset), "the clock only moves forward")
	c.offset = offset
}

// BeforeSuite wires a manager as testenv.StartManager and the registry's setup do, with the
// shifted clock given to the Reconciler.
var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	env, err = testenv.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())

	opts := options.New()
	Expect(opts.Parse([]string{"--controllers=" + cronjob.ControllerName, "--leader-elect=false", "--secure-port=0"})).To(Succeed())
	cfg := manager.RESTConfig(env.Config, opts)
	mgr, err := manager.New(cfg, opts, func(o *ctrlmanager.Options) {
		o.Controller.SkipNameValidation = ptr.To(true)
	})
	Expect(err).NotTo(HaveOccurred())
	cctx := &controller.Context{Manager: mgr, Options: opts, Config: cfg}
	Expect(cctx.Index(&batchv1.Job{}, index.ControllerUID, index.ControllerUIDOf)).To(Succeed())
	cl, err := cctx.Client(cronjob.ClientName)
	Expect(err).NotTo(HaveOccurred())
	r := &cronjob.Reconciler{
		Client:    cl,
		APIReader: mgr.GetAPIReader(),
		Recorder:  cctx.Recorder(cronjob.ControllerName),
		Clock:     clk,
	}
	Expect(r.SetupWithManager(mgr, cctx.Workers(cronjob.WorkersFlag, 5))).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	stopMgr, mgrDone = cancel, make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	Expect(mgr.GetCache().WaitForCacheSync(syncCtx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Expect(<-mgrDone).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
