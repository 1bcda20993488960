package nodelifecycle_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/kcm/kcm/internal/controller/nodelifecycle"
	"github.com/kcm/kcm/internal/controller/tainteviction"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env     *testenv.Env
	kubelet *fakeKubelet
	// controller is the Reconciler the suite's manager runs, for waits on the zone states
	// it keeps, which leave no trace in the API.
	controller *nodelifecycle.Reconciler
	// leaseCache is the controller's view of Leases, which a spec can freeze to play a
	// cache whose watch is stuck.
	leaseCache *freezableLeases
)

const (
	monitorGrace = 4 // seconds, --node-monitor-grace-period
	startupGrace = 6 // seconds, --node-startup-grace-period
)

func TestNodeLifecycleController(t *testing.T) {
	testenv.RunSuite(t, "node-lifecycle-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	// Short periods instead of minutes; a zone of more than 3 nodes counts as large, so a
	// partial outage there taints at the secondary rate of one node every 2s.
	// The taint-eviction-controller runs too: a dead node's pods must go, as in a cluster.
	Expect(env.StartManagerWith([]string{nodelifecycle.ControllerName, tainteviction.ControllerName},
		[]string{"--node-monitor-period=1s", "--node-monitor-grace-period=4s", "--node-startup-grace-period=6s",
			"--node-eviction-rate=10", "--secondary-node-eviction-rate=0.5", "--large-cluster-size-threshold=3"},
		setup.OverrideFor(nodelifecycle.ControllerName, func(r *nodelifecycle.Reconciler) {
			controller = r
			leaseCache = &freezableLeases{Reader: r.Leases, frozen: map[string]*coordinationv1.Lease{}}
			r.Leases = leaseCache
		}))).To(Succeed())
	kubelet = startFakeKubelet()
	DeferCleanup(kubelet.close)
})
