package tokencleaner_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/tokencleaner"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestTokenCleaner(t *testing.T) {
	testenv.RunSuite(t, "token-cleaner-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManager([]string{tokencleaner.ControllerName})).To(Succeed())
})
