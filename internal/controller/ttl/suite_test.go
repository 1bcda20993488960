package ttl_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/controller/ttl"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestTTLController(t *testing.T) {
	testenv.RunSuite(t, "ttl-controller suite")
}

var _ = BeforeSuite(func() {
	// A higher client rate than the default 20 QPS keeps a boundary crossing (one patch per
	// node) short.
	env = testenv.MustStart([]string{ttl.ControllerName}, "--kube-api-qps=200", "--kube-api-burst=300")
})
