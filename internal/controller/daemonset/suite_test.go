package daemonset_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestDaemonSetController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "daemonset-controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start([]string{"daemonset-controller"}, "--kube-api-qps=200", "--kube-api-burst=300")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
