package podgc_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/podgc"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// The suite runs the collector every second with a quarantine of 4 seconds, where upstream
// waits 20 and 40.
const (
	period     = time.Second
	quarantine = 4 * time.Second
)

// suiteFlags configure the manager as kcm's command line would.
var suiteFlags = []string{
	"--terminated-pod-gc-threshold=3",
	"--kube-api-qps=200",
	"--kube-api-burst=300",
}

var (
	env *testenv.Env
	// threshold is the --terminated-pod-gc-threshold the controller read.
	threshold int
)

func TestPodGC(t *testing.T) {
	testenv.RunSuite(t, "pod-garbage-collector-controller suite")
}

// suiteOverride shortens the period and the quarantine, which only the Reconciler's fields
// can, and records the threshold the controller's Setup read from the flags.
var suiteOverride = setup.OverrideFor(podgc.ControllerName, func(r *podgc.Reconciler) {
	r.Period, r.Quarantine = period, quarantine
	threshold = r.TerminatedPodThreshold
})

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{podgc.ControllerName}, suiteFlags, suiteOverride)).To(Succeed())
})
