package ttlafterfinished_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/controller/ttlafterfinished"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestTTLAfterFinished(t *testing.T) {
	testenv.RunSuite(t, "ttl-after-finished-controller suite")
}

// The controller runs as kcm runs it, set up through the registry, with the real clock,
// beside the garbage collector that finishes its foreground deletions.
var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{ttlafterfinished.ControllerName, garbagecollector.ControllerName})
})
