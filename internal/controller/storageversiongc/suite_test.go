package storageversiongc_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller/storageversiongc"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestStorageVersionGCController(t *testing.T) {
	testenv.RunSuite(t, "storageversion-garbage-collector-controller suite")
}

// gates turns on the storage version API; the API server then records its own storage
// versions under its identity Lease, which the specs use as the live API server.
const gates = "StorageVersionAPI=true,APIServerIdentity=true"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(func(te *envtest.Environment) {
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("feature-gates", gates)
		args.Set("runtime-config", "internal.apiserver.k8s.io/v1alpha1=true")
	})
	Expect(env.StartManager([]string{storageversiongc.ControllerName}, "--feature-gates="+gates)).To(Succeed())
})
