package job_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/setup"
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
var suiteFlags = []string{"--kube-api-qps=200", "--kube-api-burst=300"}

var env *testenv.Env

func TestJobController(t *testing.T) {
	testenv.RunSuite(t, "job-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	startSuiteManager()
})

// startSuiteManager runs job-controller through its own Setup, with the backoff and batch
// period shortened, which only the Reconciler's fields can.
func startSuiteManager() {
	Expect(env.StartManagerWith([]string{job.ControllerName}, suiteFlags,
		setup.OverrideFor(job.ControllerName, func(r *job.Reconciler) {
			r.PodFailureBackoff = podBackoff
			r.MaxPodFailureBackoff = maxPodBackoff
			r.BatchPeriod = batchPeriod
		}))).To(Succeed())
}

func stopSuiteManager() {
	Expect(env.StopManager()).To(Succeed())
}
