package replicaset_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestReplicaSetController(t *testing.T) {
	testenv.RunSuite(t, "replicaset-controller and replicationcontroller-controller suite")
}

var _ = BeforeSuite(func() {
	// A higher client rate than the default 20 QPS keeps the 500-pod burst short.
	env = testenv.MustStart([]string{"replicaset-controller", "replicationcontroller-controller"},
		"--kube-api-qps=200", "--kube-api-burst=300")
})
