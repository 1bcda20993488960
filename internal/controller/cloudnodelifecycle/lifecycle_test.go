package cloudnodelifecycle_test

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/controller/cloudnodelifecycle"
	"github.com/kcm/kcm/internal/testenv"
)

// lifecycleFlags run the controller every 200ms (upstream's --node-monitor-period is 5s).
var lifecycleFlags = []string{"--cloud-provider=" + providerName, "--node-monitor-period=200ms"}

// startManager starts a manager running the controller, stopped after the spec.
func startManager() {
	GinkgoHelper()
	Expect(env.StartManager([]string{cloudnodelifecycle.ControllerName}, lifecycleFlags...)).To(Succeed())
	DeferCleanup(env.StopManager)
}

// createNode creates a node whose kubelet reports Ready as ready says, deleted after the spec.
func createNode(ctx context.Context, name string, ready corev1.ConditionStatus) *corev1.Node {
	GinkgoHelper()
	n := env.Node(ctx, name, testenv.NodeReady(ready))
	env.Cleanup(n)
	return n
}

// hasShutdownTaint reads whether the node carries node.cloudprovider.kubernetes.io/shutdown.
func hasShutdownTaint(ctx context.Context, name string) func(Gomega) bool {
	return func(g Gomega) bool {
		n := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		for _, t := range n.Spec.Taints {
			if t.Key == "node.cloudprovider.kubernetes.io/shutdown" {
				g.Expect(t.Effect).To(Equal(corev1.TaintEffectNoSchedule))
				return true
			}
		}
		return false
	}
}

var _ = Describe("cloud-node-lifecycle-controller", func() {
	It("deletes a NotReady node whose instance is gone, with upstream's Event, and never asks about a Ready one", func(ctx SpecContext) {
		c := useProvider(newInstancesCloud())
		// Both instances are gone; only the node that is not Ready is the controller's business.
		gone := createNode(ctx, "life-gone", corev1.ConditionFalse)
		ready := createNode(ctx, "life-ready", corev1.ConditionTrue)
		c.setGone(gone.Name)
		c.setGone(ready.Name)
		startManager()

		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(gone), &corev1.Node{})
		}).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.MatchingFields{"involvedObject.name": gone.Name})).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Reason", "DeletingNode"),
				HaveField("Type", corev1.EventTypeNormal),
				HaveField("Message", "Deleting node life-gone because it does not exist in the cloud provider"),
				HaveField("Source.Component", "cloud-node-lifecycle-controller"),
				HaveField("InvolvedObject.UID", gone.UID),
			)))
		}).Should(Succeed())

		// Passes go on (a new NotReady node is asked about), the Ready node is never asked.
		witness := createNode(ctx, "life-witness", corev1.ConditionFalse)
		Eventually(func() int { return c.timesAsked(witness.Name) }).Should(BeNumerically(">=", 2))
		Expect(c.timesAsked(ready.Name)).To(BeZero())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ready), &corev1.Node{})).To(Succeed())
		Expect(testenv.Sample("cloud_node_lifecycle_controller_cloud_provider_calls_total",
			map[string]string{"operation": "instance_exists", "result": "instance_not_found"})).To(BeNumerically(">=", 1))
		Expect(testenv.Sample("cloud_node_lifecycle_controller_monitor_nodes_duration_seconds", nil)).To(BeNumerically(">=", 2))
		Expect(testenv.Sample("running_managed_controllers",
			map[string]string{"name": "cloud-node-lifecycle", "manager": "kube-controller-manager"})).To(Equal(1.0))
	})

	It("taints a NotReady node whose instance is shut down, and lifts the taint once it is Ready", func(ctx SpecContext) {
		c := useProvider(newInstancesCloud())
		down := createNode(ctx, "life-down", corev1.ConditionFalse)
		running := createNode(ctx, "life-running", corev1.ConditionFalse)
		c.setShutdown(down.Name)
		startManager()

		Eventually(hasShutdownTaint(ctx, down.Name)).Should(BeTrue())
		// The running node has been asked about since, and is neither tainted nor deleted.
		asked := c.timesAsked(running.Name)
		Eventually(func() int { return c.timesAsked(running.Name) }).Should(BeNumerically(">", asked))
		Expect(hasShutdownTaint(ctx, running.Name)(Default)).To(BeFalse())

		env.SetNodeReady(ctx, down, corev1.ConditionTrue)
		Eventually(hasShutdownTaint(ctx, down.Name)).Should(BeFalse())
	})

	DescribeTable("does not run with a provider without instance lookups, and says so", func(ctx SpecContext, providerFlag, named string) {
		if os.Getenv("KCM_TEST_LOG") != "" {
			Skip("KCM_TEST_LOG sends the manager's log to stderr, where the spec cannot read it")
		}
		c := newInstancesCloud()
		c.noInstances = true
		useProvider(c)
		log := gbytes.NewBuffer()
		GinkgoWriter.TeeTo(log)
		DeferCleanup(GinkgoWriter.ClearTeeWriters)
		gone := createNode(ctx, "life-unasked", corev1.ConditionFalse)
		c.setGone(gone.Name)
		Expect(env.StartManager([]string{cloudnodelifecycle.ControllerName}, append(lifecycleFlags, providerFlag)...)).To(Succeed())
		DeferCleanup(env.StopManager)

		Expect(log).To(gbytes.Say(`"msg"="Warning: failed to start cloud node lifecycle controller: cloud provider does not support instances".*"cloudProvider"="%s"`, named))
		Consistently(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(gone), &corev1.Node{})
		}).Should(Succeed())
		Expect(c.timesAsked(gone.Name)).To(BeZero())
		Expect(testenv.Sample("running_managed_controllers",
			map[string]string{"name": "cloud-node-lifecycle", "manager": "kube-controller-manager"})).To(BeZero())
	},
		Entry("a fake without InstancesV2 or Instances", "--cloud-provider="+providerName, "fake"),
		Entry("kcm's pool", "--cloud-provider="+pool.ProviderName, pool.ProviderName),
	)
})
