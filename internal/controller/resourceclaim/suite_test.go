package resourceclaim_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestResourceClaimController(t *testing.T) {
	testenv.RunSuite(t, "resourceclaim-controller suite")
}

// The API server serves resource.k8s.io/v1 by default in v1.37: no extra flags.
var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"resourceclaim-controller"})
})

const (
	driver = "gpu.example.com"
	// class is a DeviceClass name; claims are valid without the class existing.
	class = "gpu.example.com"
)
