package ephemeralvolume_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestEphemeralVolumeController(t *testing.T) {
	testenv.RunSuite(t, "ephemeral-volume-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"ephemeral-volume-controller"})
})
