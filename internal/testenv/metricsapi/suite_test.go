package metricsapi_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/discovery"

	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/internal/testenv/metricsapi"
)

func TestMetricsAPI(t *testing.T) {
	testenv.RunSuite(t, "metrics API harness suite")
}

var (
	env    *testenv.Env
	server *metricsapi.Server
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env = testenv.MustStartAPIServer()
	var err error
	server, err = metricsapi.Start(ctx, env.Config)
	Expect(err).NotTo(HaveOccurred())
	// Registered after the API server's stop, so it runs before it. Stop unregisters the
	// groups: the API server no longer lists them (a metrics.k8s.io answered before shows the
	// check is not vacuous).
	DeferCleanup(func(ctx SpecContext) {
		disco, err := discovery.NewDiscoveryClientForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(servedGroups(disco)).To(ContainElement("metrics.k8s.io"))
		server.Stop()
		Eventually(func() []string { return servedGroups(disco) }).Should(And(
			Not(ContainElement("metrics.k8s.io")), Not(ContainElement("custom.metrics.k8s.io")),
			Not(ContainElement("external.metrics.k8s.io"))))
		Expect(servedGroups(disco)).To(ContainElement("apps"))
	})
})
