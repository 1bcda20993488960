package endpoints_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/endpoints"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestEndpointsController(t *testing.T) {
	testenv.RunSuite(t, "endpoints-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{endpoints.ControllerName})
})
