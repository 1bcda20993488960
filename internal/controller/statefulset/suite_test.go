package statefulset_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestStatefulSetController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "statefulset-controller suite")
}

var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	var err error
	// The garbage collector deletes the claims the retention policy hands to a pod.
	env, err = testenv.Start([]string{"statefulset-controller", "garbage-collector-controller"},
		"--kube-api-qps=200", "--kube-api-burst=300")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
