package serviceaccount_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/serviceaccount"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestServiceAccountController(t *testing.T) {
	testenv.RunSuite(t, "serviceaccount-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{serviceaccount.ControllerName})
})
