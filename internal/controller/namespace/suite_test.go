package namespace_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/namespace"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestNamespaceController(t *testing.T) {
	testenv.RunSuite(t, "namespace-controller suite")
}

// The controller runs at the default client rates (--kube-api-qps=20, --kube-api-burst=30,
// raised 20 and 100 times as upstream does), so the timing spec measures what a default
// kcm does.
var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{namespace.ControllerName})
})
