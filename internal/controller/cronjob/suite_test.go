package cronjob_test

import (
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/cronjob"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	clk = &shiftedClock{}
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

	Expect(env.StartManagerWith([]string{"--controllers=" + cronjob.ControllerName}, func(cctx *controller.Context) error {
		if err := cctx.Index(&batchv1.Job{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
			return err
		}
		cl, err := cctx.Client(cronjob.ClientName)
		if err != nil {
			return err
		}
		r := &cronjob.Reconciler{
			Client:    cl,
			APIReader: cctx.Manager.GetAPIReader(),
			Recorder:  cctx.Recorder(cronjob.ControllerName),
			Clock:     clk,
		}
		return r.SetupWithManager(cctx.Manager, cctx.Workers(cronjob.WorkersFlag, 5))
	})).To(Succeed())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
