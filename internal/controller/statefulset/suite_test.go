package statefulset_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestStatefulSetController(t *testing.T) {
	testenv.RunSuite(t, "statefulset-controller suite")
}

var _ = BeforeSuite(func() {
	// The garbage collector deletes the claims the retention policy hands to a pod.
	env = testenv.MustStart([]string{"statefulset-controller", "garbage-collector-controller"},
		"--kube-api-qps=200", "--kube-api-burst=300")
})
