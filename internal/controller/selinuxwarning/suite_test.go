package selinuxwarning_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestSELinuxWarningController(t *testing.T) {
	testenv.RunSuite(t, "selinux-warning-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	// As an operator enables it: every default controller, and this one, off by default.
	Expect(env.StartManager([]string{"*", "selinux-warning-controller"})).To(Succeed())
	DeferCleanup(env.StopManager)
})
