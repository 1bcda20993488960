package resourcequota_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/resourcequota"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestResourceQuotaController(t *testing.T) {
	testenv.RunSuite(t, "resourcequota-controller suite")
}

// The suite keeps the default --resource-quota-sync-period (5m), so that every recount the
// specs wait for comes from an event, never from the periodic resync; the resync spec
// restarts the manager with a short period.
var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{resourcequota.ControllerName})
})
