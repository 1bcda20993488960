package pvprotection_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPVProtectionController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-protection-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"persistentvolume-protection-controller"})
})
