package podgc_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/controller/podgc"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
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
	"--leader-elect=false",
	"--secure-port=0",
	"--terminated-pod-gc-threshold=3",
	"--kube-api-qps=200",
	"--kube-api-burst=300",
}

var (
	env       *testenv.Env
	stopMgr   context.CancelFunc
	mgrDone   chan error
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

	opts := options.New()
	Expect(opts.Parse(suiteFlags)).To(Succeed())
	cfg := manager.RESTConfig(env.Config, opts)
	mgr, err := manager.New(cfg, opts, func(o *ctrlmanager.Options) {
		o.Controller.SkipNameValidation = ptr.To(true)
	})
	Expect(err).NotTo(HaveOccurred())
	cctx := &controller.Context{Manager: mgr, Options: opts, Config: cfg}
	Expect(cctx.Index(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf)).To(Succeed())
	cl, err := cctx.Client("pod-garbage-collector")
	Expect(err).NotTo(HaveOccurred())
	threshold = int(opts.Int32("terminated-pod-gc-threshold"))
	r := &podgc.Reconciler{
		Client:                 cl,
		APIReader:              mgr.GetAPIReader(),
		TerminatedPodThreshold: threshold,
		Period:                 period,
		Quarantine:             quarantine,
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	stopMgr, mgrDone = cancel, make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	Expect(mgr.GetCache().WaitForCacheSync(syncCtx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Expect(<-mgrDone).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
