package nodeipam_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestNodeIPAMController(t *testing.T) {
	testenv.RunSuite(t, "node-ipam-controller suite")
}

// Each spec starts the manager with its own flags (the cluster CIDRs differ) and leaves no
// node behind: nodes are cluster-wide.
var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
})
