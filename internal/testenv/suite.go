package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/setup"
)

// Defaults for suites on a loaded 2-core machine: an API server, etcd, the manager and the
// test share it, so a step that takes milliseconds alone can take seconds. A state that stays
// wrong is a missed update to find, not a timeout to raise.
const (
	EventuallyTimeout    = 30 * time.Second
	EventuallyPolling    = 100 * time.Millisecond
	ConsistentlyDuration = 2 * time.Second
	ConsistentlyPolling  = 100 * time.Millisecond
)

// RunSuite runs a package's Ginkgo specs with kcm's defaults: Gomega failing through Ginkgo,
// Eventually/Consistently timings suited to a loaded machine, and controller-runtime's logs
// in Ginkgo's writer (shown for failed specs) unless KCM_TEST_LOG asks for them all.
func RunSuite(t *testing.T, description string) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(EventuallyTimeout)
	SetDefaultEventuallyPollingInterval(EventuallyPolling)
	SetDefaultConsistentlyDuration(ConsistentlyDuration)
	SetDefaultConsistentlyPollingInterval(ConsistentlyPolling)
	if os.Getenv("KCM_TEST_LOG") == "" {
		ctrllog.SetLogger(GinkgoLogr)
	}
	RunSpecs(t, description)
}

// MustStart is Start for a BeforeSuite: the API server and a manager running controllers
// through their own Setup; the AfterSuite is registered with it.
func MustStart(controllers []string, args ...string) *Env {
	GinkgoHelper()
	env, err := StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
	Expect(env.StartManager(controllers, args...)).To(Succeed())
	return env
}

// MustStartAPIServer is StartAPIServer for a BeforeSuite; the API server (and any manager
// started on it) stops after the suite.
func MustStartAPIServer(configure ...func(*envtest.Environment)) *Env {
	GinkgoHelper()
	env, err := StartAPIServer(configure...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
	return env
}

// Namespace creates a namespace with a generated name starting with prefix, for one spec's
// objects. It is left in place: specs run in namespaces of their own, and deleting them
// would start work (namespace-controller, garbage collector) other specs do not expect.
func (e *Env) Namespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(e.Client.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// RestartManager stops the running manager, if any, and starts one with the named
// controllers, flags and overrides, failing the spec if either step fails: how a spec runs
// its controller differently (a gate off, a reconciler adjusted) and puts it back after.
func (e *Env) RestartManager(controllers, args []string, overrides ...setup.Override) {
	GinkgoHelper()
	Expect(e.StopManager()).To(Succeed())
	Expect(e.StartManagerWith(controllers, args, overrides...)).To(Succeed())
}

// Get returns a function that reads the object ns/name (ns empty when cluster-scoped) afresh
// from the API server, failing its Gomega when it cannot: for Eventually, or called once
// with Default.
func Get[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, e *Env, ns, name string) func(g Gomega) PT {
	return func(g Gomega) PT {
		obj := PT(new(T))
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)).To(Succeed())
		return obj
	}
}
