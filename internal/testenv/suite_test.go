package testenv_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

func TestTestenv(t *testing.T) {
	testenv.RunSuite(t, "testenv stand-ins suite")
}

// env is an API server alone: the stand-ins play the kubelet, and no controller runs.
var env *testenv.Env

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
})
