package nodelifecycle_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var (
	env     *testenv.Env
	kubelet *fakeKubelet
)

const (
	monitorGrace = 4 // seconds, --node-monitor-grace-period
	startupGrace = 6 // seconds, --node-startup-grace-period
)

func TestNodeLifecycleController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "node-lifecycle-controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	// Short periods instead of minutes; a zone of more than 3 nodes counts as large, so a
	// partial outage there taints at the secondary rate of one node every 2s.
	// The taint-eviction-controller runs too: a dead node's pods must go, as in a cluster.
	env, err = testenv.Start([]string{"node-lifecycle-controller", "taint-eviction-controller"},
		"--node-monitor-period=1s", "--node-monitor-grace-period=4s", "--node-startup-grace-period=6s",
		"--node-eviction-rate=10", "--secondary-node-eviction-rate=0.5", "--large-cluster-size-threshold=3")
	Expect(err).NotTo(HaveOccurred())
	kubelet = startFakeKubelet()
	DeferCleanup(kubelet.close)
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
