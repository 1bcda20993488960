package servicelb_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestServiceLBController(t *testing.T) {
	testenv.RunSuite(t, "service-lb-controller suite")
}

// BeforeSuite starts a dual-stack API server; each top-level container starts the manager
// with the provider it tests, and stops it.
var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(testenv.DualStack)
})
