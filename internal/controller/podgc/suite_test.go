package podgc_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/podgc"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/testenv"
)

// The suite runs the collector every second with a quarantine of 4 seconds, where upstream
// waits 20 and 40.
const (
	period     = time.Second
	quarantine = 4 * time.Second
)

// suiteFlags configure the manager as kcm's command line would.
var suiteFlags = []string{
	"--controllers=" + podgc.ControllerName,
	"--terminated-pod-gc-threshold=3",
	"--kube-api-qps=200",
	"--kube-api-burst=300",
}

var (
	env       *testenv.Env
	threshold int
)

func TestPodGC(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "pod-garbage-collector-controller suite")
}

// BeforeSuite wires a manager as testenv.StartManager and the registry's setup do, except
// for the period and the quarantine, which only the Reconciler's fields can shorten.
var _ = BeforeSuite(func() {
	if os.Getenv("KCM_TEST_LOG") == "" {
		// The controller's logs, shown with a failed spec.
		ctrllog.SetLogger(GinkgoLogr)
	}
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	env, err = testenv.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())

	Expect(env.StartManagerWith(suiteFlags, func(cctx *controller.Context) error {
		if err := cctx.Index(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf); err != nil {
			return err
		}
		cl, err := cctx.Client("pod-garbage-collector")
		if err != nil {
			return err
		}
		threshold = int(cctx.Options.Int32("terminated-pod-gc-threshold"))
		r := &podgc.Reconciler{
			Client:                 cl,
			APIReader:              cctx.Manager.GetAPIReader(),
			TerminatedPodThreshold: threshold,
			Period:                 period,
			Quarantine:             quarantine,
		}
		return r.SetupWithManager(cctx.Manager)
	})).To(Succeed())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
