package bootstrapsigner_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/bootstrapsigner"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestBootstrapSigner(t *testing.T) {
	testenv.RunSuite(t, "bootstrap-signer-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManager([]string{bootstrapsigner.ControllerName})).To(Succeed())
})
