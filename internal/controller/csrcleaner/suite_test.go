package csrcleaner_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/csrcleaner"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// clk is the cleaner's clock, which the specs move on.
	clk = &testenv.OffsetClock{}
	rec *testenv.RecordingClient
)

func TestCSRCleaner(t *testing.T) {
	testenv.RunSuite(t, "certificatesigningrequest-cleaner-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{csrcleaner.ControllerName}, nil,
		setup.OverrideFor(csrcleaner.ControllerName, func(r *csrcleaner.Reconciler) {
			r.Clock = clk
			rec = testenv.NewRecordingClient(r.Client)
			r.Client = rec
		}))).To(Succeed())
})
