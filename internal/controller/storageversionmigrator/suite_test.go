package storageversionmigrator_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/storageversionmigrator"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// clock is the controller's clock: a spec moves it past the minute a migration of an
	// unknown resource is retried for.
	clock = &testenv.OffsetClock{}
)

func TestStorageVersionMigrator(t *testing.T) {
	testenv.RunSuite(t, "storage-version-migrator-controller suite")
}

var _ = BeforeSuite(func() {
	// storagemigration.k8s.io/v1 is served by default (GA in v1.37), as the controller's
	// own role system:controller:storage-version-migrator-controller is made by default.
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{storageversionmigrator.ControllerName}, nil,
		setup.OverrideFor[storageversionmigrator.Reconciler](storageversionmigrator.ControllerName, func(r *storageversionmigrator.Reconciler) {
			r.Clock = clock
		}))).To(Succeed())
})
