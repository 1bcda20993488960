package devicetainteviction_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/devicetainteviction"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env   *testenv.Env
	clock = &testenv.OffsetClock{}
)

func TestDeviceTaintEvictionController(t *testing.T) {
	testenv.RunSuite(t, "device-taint-eviction-controller suite")
}

// The API server serves resource.k8s.io/v1, DeviceTaintRules included, by default in v1.37.
var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{devicetainteviction.ControllerName}, nil,
		setup.OverrideFor(devicetainteviction.ControllerName, func(r *devicetainteviction.Reconciler) { r.Clock = clock }))).To(Succeed())
})

const driver = "gpu.example.com"
