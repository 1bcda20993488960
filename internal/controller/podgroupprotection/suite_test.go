package podgroupprotection_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller/podgroupprotection"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPodGroupProtectionController(t *testing.T) {
	testenv.RunSuite(t, "podgroup-protection-controller suite")
}

// gates turns on PodGroups (scheduling.k8s.io/v1beta1, beta and off by default in v1.37) and
// the API server's PodGroupProtection admission plugin that stamps the finalizer.
const gates = "GenericWorkload=true"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(func(te *envtest.Environment) {
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("feature-gates", gates)
		args.Set("runtime-config", "scheduling.k8s.io/v1beta1=true")
	})
	Expect(env.StartManager([]string{podgroupprotection.ControllerName}, "--feature-gates="+gates)).To(Succeed())
})
