package endpointslicemirroring_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/endpointslicemirroring"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestEndpointSliceMirroringController(t *testing.T) {
	testenv.RunSuite(t, "endpointslice-mirroring-controller suite")
}

// maxPerSubset is lowered from upstream's 1000 so that the cap is cheap to reach.
const maxPerSubset = 4

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{endpointslicemirroring.ControllerName},
		fmt.Sprintf("--mirroring-max-endpoints-per-subset=%d", maxPerSubset))
})
