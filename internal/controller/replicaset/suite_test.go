package replicaset_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestReplicaSetController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "replicaset-controller and replicationcontroller-controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	// A higher client rate than the default 20 QPS keeps the 500-pod burst short.
	env, err = testenv.Start([]string{"replicaset-controller", "replicationcontroller-controller"},
		"--kube-api-qps=200", "--kube-api-burst=300")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
