package daemonset_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestDaemonSetController(t *testing.T) {
	testenv.RunSuite(t, "daemonset-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"daemonset-controller"}, "--kube-api-qps=200", "--kube-api-burst=300")
})
