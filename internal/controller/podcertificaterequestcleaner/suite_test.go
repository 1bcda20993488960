package podcertificaterequestcleaner_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/podcertificaterequestcleaner"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// clk is the cleaner's clock, which the specs move on.
	clk = &testenv.OffsetClock{}
	rec *testenv.RecordingClient
)

func TestPodCertificateRequestCleaner(t *testing.T) {
	testenv.RunSuite(t, "podcertificaterequest-cleaner-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{podcertificaterequestcleaner.ControllerName}, nil,
		setup.OverrideFor(podcertificaterequestcleaner.ControllerName, func(r *podcertificaterequestcleaner.Reconciler) {
			r.Clock = clk
			rec = testenv.NewRecordingClient(r.Client)
			r.Client = rec
		}))).To(Succeed())
})
