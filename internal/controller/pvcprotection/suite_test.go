package pvcprotection_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPVCProtectionController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolumeclaim-protection-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"persistentvolumeclaim-protection-controller"})
})
