package deployment_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

// controllers are what the suite runs: the Deployment's ReplicaSets need their controller to
// get pods. The test plays the kubelet (helpers_test.go).
var controllers = []string{"deployment-controller", "replicaset-controller"}

// suiteFlags raise the client rate above the default 20 QPS so that the specs stay short;
// the creation-time spec runs with the defaults.
var suiteFlags = []string{"--kube-api-qps=200", "--kube-api-burst=300"}

func TestDeploymentController(t *testing.T) {
	testenv.RunSuite(t, "deployment-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart(controllers, suiteFlags...)
})
