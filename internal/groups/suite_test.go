package groups_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

func TestElections(t *testing.T) {
	testenv.RunSuite(t, "controller groups' elections suite")
}

// env is an API server alone: the elections under test run in this process, several
// replicas side by side, each with its own client.
var env *testenv.Env

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
})
