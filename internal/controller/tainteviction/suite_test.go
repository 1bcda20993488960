package tainteviction_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/tainteviction"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// controller is the Reconciler the suite's manager runs, for waits on the evictions it
	// has scheduled, which leave no trace in the API.
	controller *tainteviction.Reconciler
)

func TestTaintEvictionController(t *testing.T) {
	testenv.RunSuite(t, "taint-eviction-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{tainteviction.ControllerName}, nil,
		setup.OverrideFor(tainteviction.ControllerName, func(r *tainteviction.Reconciler) { controller = r }))).To(Succeed())
})
