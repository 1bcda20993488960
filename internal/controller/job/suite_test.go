package job_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/index"
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
	"--kube-api-qps=200",
	"--kube-api-burst=300",
}

var env *testenv.Env

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

// startSuiteManager sets up the job-controller as the registry's setupJob does, except for
// the backoff and batch period, which only the Reconciler's fields shorten.
func startSuiteManager() {
	Expect(env.StartManagerWith(suiteFlags, func(cctx *controller.Context) error {
		if err := cctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
			return err
		}
		cl, err := cctx.Client("job-controller")
		if err != nil {
			return err
		}
		r := &job.Reconciler{
			Client:               cl,
			APIReader:            cctx.Manager.GetAPIReader(),
			Recorder:             cctx.Recorder(job.ControllerName),
			PodFailureBackoff:    podBackoff,
			MaxPodFailureBackoff: maxPodBackoff,
			BatchPeriod:          batchPeriod,
		}
		return r.SetupWithManager(cctx.Manager, cctx.Workers("concurrent-job-syncs", 5))
	})).To(Succeed())
}

func stopSuiteManager() {
	Expect(env.StopManager()).To(Succeed())
}
