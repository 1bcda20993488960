package garbagecollector_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// discoveryPeriod replaces upstream's 30 s, so that a CRD installed during a spec is
// watched within a second or two.
const discoveryPeriod = time.Second

// suiteControllers run beside the collector, at the default client rates.
var suiteControllers = []string{garbagecollector.ControllerName, "deployment-controller", "replicaset-controller"}

var env *testenv.Env

func TestGarbageCollector(t *testing.T) {
	testenv.RunSuite(t, "garbage-collector-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	startSuiteManager()
})

// startSuiteManager runs the collector and the workload controllers through their own
// Setup, with a short discovery period.
func startSuiteManager() {
	Expect(env.StartManagerWith(suiteControllers, nil,
		setup.OverrideFor(garbagecollector.ControllerName, func(r *garbagecollector.Reconciler) {
			r.DiscoveryPeriod = discoveryPeriod
		}))).To(Succeed())
}

func stopSuiteManager() {
	Expect(env.StopManager()).To(Succeed())
}
