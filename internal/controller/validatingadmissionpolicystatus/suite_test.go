package validatingadmissionpolicystatus_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/validatingadmissionpolicystatus"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestValidatingAdmissionPolicyStatusController(t *testing.T) {
	testenv.RunSuite(t, "validatingadmissionpolicy-status-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManager([]string{validatingadmissionpolicystatus.ControllerName})).To(Succeed())
})
