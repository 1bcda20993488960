package pvbinder_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPVBinder(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-binder-controller suite")
}

// suiteSyncPeriod is a short resync: a claim finds a class that appeared, or a pod that
// waits for it, on the periodic sync as upstream.
const suiteSyncPeriod = "--pvclaimbinder-sync-period=2s"

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"persistentvolume-binder-controller"}, suiteSyncPeriod)
})
