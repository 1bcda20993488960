package tainteviction_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestTaintEvictionController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "taint-eviction-controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start([]string{"taint-eviction-controller"})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
