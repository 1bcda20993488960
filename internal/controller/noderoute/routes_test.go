package noderoute_test

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/controller/noderoute"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// routeFlags run the controller: a provider, CIDRs allocated, a 1s period (upstream's is 10s).
var routeFlags = []string{
	"--cloud-provider=" + providerName,
	"--allocate-node-cidrs=true",
	"--cluster-cidr=10.244.0.0/16,fd00:10:244::/56",
	"--route-reconciliation-period=1s",
}

// startManager starts a manager running the controller with args, stopped after the spec.
func startManager(args []string, overrides ...setup.Override) {
	GinkgoHelper()
	Expect(env.StartManagerWith([]string{noderoute.ControllerName}, args, overrides...)).To(Succeed())
	DeferCleanup(env.StopManager)
}

// createNode creates a Ready node with pod CIDRs, deleted after the spec.
func createNode(ctx context.Context, name string, podCIDRs ...string) *corev1.Node {
	GinkgoHelper()
	n := env.Node(ctx, name, testenv.NodePodCIDRs(podCIDRs...))
	env.Cleanup(n)
	return n
}

// expectNetwork waits for the node's NetworkUnavailable condition to say status and reason.
func expectNetwork(ctx context.Context, name string, status corev1.ConditionStatus, reason, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		c := networkUnavailable(n)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status))
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(c.Message).To(Equal(message))
	}).Should(Succeed())
}

var _ = Describe("node-route-controller", func() {
	It("routes every pod CIDR of every node, deletes a deleted node's routes and keeps routes outside --cluster-cidr", func(ctx SpecContext) {
		c := useProvider(newRoutesCloud(
			&cloudprovider.Route{Name: "foreign", TargetNode: "elsewhere", DestinationCIDR: "192.168.50.0/24"},
			&cloudprovider.Route{Name: "stale", TargetNode: "long-gone", DestinationCIDR: "10.244.99.0/24"},
		))
		startManager(routeFlags)
		a := createNode(ctx, "route-a", "10.244.1.0/24", "fd00:10:244:1::/64")
		b := createNode(ctx, "route-b", "10.244.2.0/24")

		Eventually(c.routes).Should(Equal([]string{
			"elsewhere 192.168.50.0/24",
			"route-a 10.244.1.0/24", "route-a fd00:10:244:1::/64",
			"route-b 10.244.2.0/24",
		}))
		// Upstream's name hint: the node's UID, for each of its CIDRs.
		Expect(c.hint("10.244.1.0/24")).To(Equal(string(a.UID)))
		Expect(c.hint("fd00:10:244:1::/64")).To(Equal(string(a.UID)))
		Expect(c.hint("10.244.2.0/24")).To(Equal(string(b.UID)))
		expectNetwork(ctx, "route-a", corev1.ConditionFalse, "RouteCreated", "RouteController created a route")
		expectNetwork(ctx, "route-b", corev1.ConditionFalse, "RouteCreated", "RouteController created a route")

		Expect(env.Client.Delete(ctx, b)).To(Succeed())
		Eventually(c.routes).Should(Equal([]string{
			"elsewhere 192.168.50.0/24",
			"route-a 10.244.1.0/24", "route-a fd00:10:244:1::/64",
		}))
		Expect(testenv.Sample("route_controller_route_sync_total",
			map[string]string{"trigger": "periodic", "outcome": "changed"})).To(BeNumerically(">=", 2))
	})

	It("reports a route the provider refuses: FailedToCreateRoute and NetworkUnavailable True, until it is created", func(ctx SpecContext) {
		c := useProvider(newRoutesCloud())
		c.setRefused("10.244.3.0/24", true)
		startManager(routeFlags)
		n := createNode(ctx, "route-refused", "10.244.3.0/24")

		expectNetwork(ctx, n.Name, corev1.ConditionTrue, "NoRouteCreated", "RouteController failed to create a route")
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.MatchingFields{"involvedObject.name": n.Name})).To(Succeed())
			var found bool
			for _, e := range events.Items {
				if e.Reason == "FailedToCreateRoute" {
					found = true
					g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
					g.Expect(e.Source.Component).To(Equal("route_controller"))
					g.Expect(e.InvolvedObject.UID).To(Equal(n.UID))
					g.Expect(e.Message).To(HavePrefix("Could not create route " + string(n.UID) + " 10.244.3.0/24 for node route-refused after "))
					g.Expect(e.Message).To(HaveSuffix(": quota exceeded"))
				}
			}
			g.Expect(found).To(BeTrue(), "no FailedToCreateRoute Event")
		}).Should(Succeed())
		Expect(c.routes()).To(BeEmpty())

		c.setRefused("10.244.3.0/24", false)
		Eventually(c.routes).Should(Equal([]string{"route-refused 10.244.3.0/24"}))
		expectNetwork(ctx, n.Name, corev1.ConditionFalse, "RouteCreated", "RouteController created a route")
	})

	It("with CloudControllerManagerWatchBasedRoutesReconciliation, routes a new node when it appears, not on the period", func(ctx SpecContext) {
		c := useProvider(newRoutesCloud())
		watching := false
		startManager([]string{
			"--cloud-provider=" + providerName, "--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16",
			"--route-reconciliation-period=1h",
			"--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true",
		}, setup.OverrideFor(noderoute.ControllerName, func(r *noderoute.Reconciler) {
			watching = r.WatchNodes
			r.MinInterval = 100 * time.Millisecond // upstream: up to 10s between node changes
		}))
		Expect(watching).To(BeTrue())
		createNode(ctx, "route-watched", "10.244.4.0/24")
		Eventually(c.routes).Should(Equal([]string{"route-watched 10.244.4.0/24"}))
		// A reconcile has run by now; with a 1h period only the second node's creation can
		// route it.
		createNode(ctx, "route-watched-2", "10.244.6.0/24")
		Eventually(c.routes).Should(Equal([]string{"route-watched 10.244.4.0/24", "route-watched-2 10.244.6.0/24"}))
		expectNetwork(ctx, "route-watched-2", corev1.ConditionFalse, "RouteCreated", "RouteController created a route")
		Expect(testenv.Sample("route_controller_route_sync_total",
			map[string]string{"trigger": "node_change", "outcome": "changed"})).To(BeNumerically(">=", 1))
	})

	DescribeTable("does not run, and says why",
		func(ctx SpecContext, disableRoutes bool, args []string, line string) {
			// line is a regular expression.
			if os.Getenv("KCM_TEST_LOG") != "" {
				Skip("KCM_TEST_LOG sends the manager's log to stderr, where the spec cannot read it")
			}
			c := newRoutesCloud()
			c.DisableRoutes = disableRoutes
			useProvider(c)
			log := gbytes.NewBuffer()
			GinkgoWriter.TeeTo(log)
			DeferCleanup(GinkgoWriter.ClearTeeWriters)
			n := createNode(ctx, "route-skipped", "10.244.5.0/24")
			startManager(append([]string{"--cloud-provider=" + providerName, "--cluster-cidr=10.244.0.0/16",
				"--route-reconciliation-period=1s"}, args...))

			Expect(log).To(gbytes.Say(line))
			Consistently(c.routes).Should(BeEmpty())
			Expect(c.called("list-routes")).To(BeFalse())
			got := &corev1.Node{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(n), got)).To(Succeed())
			Expect(networkUnavailable(got)).To(BeNil())
		},
		Entry("without --allocate-node-cidrs", false, nil,
			"Will not configure cloud provider routes for allocate-node-cidrs"),
		Entry("with --configure-cloud-routes=false", false, []string{"--allocate-node-cidrs=true", "--configure-cloud-routes=false"},
			"Will not configure cloud provider routes for allocate-node-cidrs"),
		Entry("with a provider without routes", true, []string{"--allocate-node-cidrs=true"},
			"--configure-cloud-routes is set, but cloud provider does not support routes. Will not configure cloud provider routes."),
		Entry("with kcm's pool provider", false, []string{"--allocate-node-cidrs=true", "--cloud-provider=" + pool.ProviderName},
			`--configure-cloud-routes is set, but cloud provider does not support routes. Will not configure cloud provider routes.".*"cloudProvider"="pool"`),
	)
})
