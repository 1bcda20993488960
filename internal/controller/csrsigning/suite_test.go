package csrsigning_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestCSRSigning(t *testing.T) {
	testenv.RunSuite(t, "certificatesigningrequest-signing-controller suite")
}

// The API server only; each container starts the manager with the flags it is about.
var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
})
