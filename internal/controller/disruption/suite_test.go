package disruption_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestDisruptionController(t *testing.T) {
	testenv.RunSuite(t, "disruption-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"disruption-controller"})
})
