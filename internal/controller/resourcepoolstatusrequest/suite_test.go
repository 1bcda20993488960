package resourcepoolstatusrequest_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller/resourcepoolstatusrequest"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env       *testenv.Env
	fakeClock = clocktesting.NewFakeClock(time.Now())
)

func TestResourcePoolStatusRequestController(t *testing.T) {
	testenv.RunSuite(t, "resourcepoolstatusrequest-controller suite")
}

// gates turns on ResourcePoolStatusRequests (resource.k8s.io/v1alpha3, alpha and off by
// default in v1.37). The API server also keeps slices' partitionTypeAttribute
// (DRAPartitionableDevicesType, alpha), which the partition view groups by.
const gates = "DRAResourcePoolStatus=true"

const serverGates = gates + ",DRAPartitionableDevicesType=true"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(func(te *envtest.Environment) {
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("feature-gates", serverGates)
		args.Set("runtime-config", "resource.k8s.io/v1alpha3=true")
	})
	// Upstream's lifetimes, looked for every second rather than every ten minutes, on a clock
	// the specs move.
	Expect(env.StartManagerWith([]string{resourcepoolstatusrequest.ControllerName}, []string{"--feature-gates=" + gates},
		setup.OverrideFor(resourcepoolstatusrequest.ControllerName, func(r *resourcepoolstatusrequest.Reconciler) {
			r.CleanupInterval = time.Second
			r.Clock = fakeClock
		}))).To(Succeed())
})
