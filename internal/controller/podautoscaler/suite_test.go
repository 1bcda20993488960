package podautoscaler_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/podautoscaler"
	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/internal/testenv/metricsapi"
)

var (
	env     *testenv.Env
	metrics *metricsapi.Server
)

func TestHorizontalPodAutoscalerController(t *testing.T) {
	testenv.RunSuite(t, "horizontal-pod-autoscaler-controller suite")
}

// Short periods, so that specs see several syncs: every HPA is synced each second (upstream's
// 15s), and a scale-down waits 5s for the stabilization window (upstream's 5m).
const (
	syncPeriod          = "1s"
	downscaleWindowSecs = 5
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env = testenv.MustStartAPIServer()
	var err error
	metrics, err = metricsapi.Start(ctx, env.Config)
	Expect(err).NotTo(HaveOccurred())
	// Registered after the API server's stop, so it runs before it.
	DeferCleanup(metrics.Stop)
	Expect(env.StartManager([]string{podautoscaler.ControllerName},
		"--horizontal-pod-autoscaler-sync-period="+syncPeriod,
		"--horizontal-pod-autoscaler-downscale-stabilization=5s")).To(Succeed())
})
