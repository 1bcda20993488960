package cloudnode_test

import (
	"bytes"
	"context"
	"os"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/controller/cloudnode"
	"github.com/kcm/kcm/internal/controller/ttl"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// uninitialized is the taint the kubelet registers a node with under --cloud-provider=external.
var uninitialized = corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}

func address(t corev1.NodeAddressType, a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: t, Address: a}
}

// register plays the kubelet: it registers the node (status included, as the kubelet
// creates it) and removes it after the spec; nodes are cluster-wide.
func register(ctx context.Context, node *corev1.Node) *corev1.Node {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, node)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}))).To(Succeed())
	})
	return node
}

// kubeletNode is a node as a kubelet with --cloud-provider=external registers it: tainted,
// its hostname among its addresses, Ready.
func kubeletNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{uninitialized}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{address(corev1.NodeHostName, name+"-host")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

func getNode(ctx context.Context, g Gomega, name string) *corev1.Node {
	n := &corev1.Node{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
	return n
}

var _ = Describe("cloud-node-controller with a provider that looks instances up", Ordered, func() {
	BeforeAll(func() {
		// A short refresh period, so that a spec sees several passes.
		Expect(env.StartManagerWith([]string{cloudnode.ControllerName},
			[]string{"--cloud-provider=" + testProvider, "--node-status-update-frequency=1s"},
			setup.OverrideFor(cloudnode.ControllerName, func(r *cloudnode.Reconciler) {
				writes = &statusWrites{Client: r.Client, byNode: map[string]int{}}
				r.Client = writes
			}))).To(Succeed())
		DeferCleanup(env.StopManager)
	})

	It("initialises a node the kubelet registered tainted: provider ID, labels, addresses, then the taint lifted, with upstream's Event and metrics", func(ctx SpecContext) {
		removals := testenv.Sample("node_controller_cloud_provider_taint_removal_delay_seconds", nil)
		syncs := testenv.Sample("node_controller_initial_node_sync_delay_seconds", nil)
		cloud.set("init", cloudprovider.InstanceMetadata{
			ProviderID: "cloudnode-test://i-init", InstanceType: "m5.large", Zone: "zone-a", Region: "region-1",
			AdditionalLabels: map[string]string{"example.com/rack": "r7", "kubernetes.io/hostname": "not-allowed"},
			NodeAddresses:    []corev1.NodeAddress{address(corev1.NodeInternalIP, "10.0.0.1"), address(corev1.NodeExternalIP, "192.0.2.1")},
		})
		node := kubeletNode("init")
		other := corev1.Taint{Key: "example.com/dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
		node.Spec.Taints = append(node.Spec.Taints, other)
		registered := register(ctx, node)

		Eventually(func(g Gomega) {
			n := getNode(ctx, g, "init")
			// The API server's TaintNodesByCondition adds not-ready, which stays.
			g.Expect(n.Spec.Taints).To(ContainElement(other))
			g.Expect(n.Spec.Taints).NotTo(ContainElement(HaveField("Key", uninitialized.Key)))
			g.Expect(n.Spec.ProviderID).To(Equal("cloudnode-test://i-init"))
			g.Expect(n.Labels).To(And(
				HaveKeyWithValue(corev1.LabelInstanceType, "m5.large"), HaveKeyWithValue(corev1.LabelInstanceTypeStable, "m5.large"),
				HaveKeyWithValue(corev1.LabelFailureDomainBetaZone, "zone-a"), HaveKeyWithValue(corev1.LabelTopologyZone, "zone-a"),
				HaveKeyWithValue(corev1.LabelFailureDomainBetaRegion, "region-1"), HaveKeyWithValue(corev1.LabelTopologyRegion, "region-1"),
				HaveKeyWithValue("example.com/rack", "r7"), Not(HaveKey("kubernetes.io/hostname")),
			))
			// The provider's addresses, and the kubelet's hostname, which the provider lacks.
			g.Expect(n.Status.Addresses).To(Equal([]corev1.NodeAddress{
				address(corev1.NodeInternalIP, "10.0.0.1"), address(corev1.NodeExternalIP, "192.0.2.1"),
				address(corev1.NodeHostName, "init-host"),
			}))
			// The kubelet's part of the status stays.
			g.Expect(n.Status.Conditions).To(ContainElement(HaveField("Reason", "KubeletReady")))
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", "Synced"),
				HaveField("Type", corev1.EventTypeNormal),
				HaveField("Note", "Node synced successfully"),
				HaveField("ReportingController", "cloud-node-controller"),
				HaveField("Regarding.Kind", "Node"),
				HaveField("Regarding.Name", "init"),
				HaveField("Regarding.UID", registered.UID),
			)))
		}).Should(Succeed())
		Expect(testenv.Sample("node_controller_cloud_provider_taint_removal_delay_seconds", nil)).To(BeNumerically(">", removals))
		Expect(testenv.Sample("node_controller_initial_node_sync_delay_seconds", nil)).To(BeNumerically(">", syncs))
		Expect(testenv.Sample("running_managed_controllers", map[string]string{"name": "cloud-node", "manager": "kube-controller-manager"})).To(Equal(1.0))
	})

	It("leaves a node whose instance the provider does not find tainted, retrying until it appears", func(ctx SpecContext) {
		register(ctx, kubeletNode("late"))
		// The witness that it was looked at, more than once: the sync is retried.
		Eventually(func() int { return cloud.asked("late") }).Should(BeNumerically(">=", 2))
		n := getNode(ctx, Default, "late")
		Expect(n.Spec.Taints).To(ContainElement(uninitialized))
		Expect(n.Spec.ProviderID).To(BeEmpty())

		cloud.set("late", cloudprovider.InstanceMetadata{ProviderID: "cloudnode-test://i-late",
			NodeAddresses: []corev1.NodeAddress{address(corev1.NodeInternalIP, "10.0.0.2")}})
		Eventually(func(g Gomega) {
			n := getNode(ctx, g, "late")
			g.Expect(n.Spec.Taints).NotTo(ContainElement(HaveField("Key", uninitialized.Key)))
			g.Expect(n.Spec.ProviderID).To(Equal("cloudnode-test://i-late"))
		}).Should(Succeed())
	})

	It("refreshes an initialised node's addresses every --node-status-update-frequency, writing only changes", func(ctx SpecContext) {
		cloud.set("moving", cloudprovider.InstanceMetadata{ProviderID: "cloudnode-test://i-moving",
			NodeAddresses: []corev1.NodeAddress{address(corev1.NodeInternalIP, "10.0.1.1")}})
		register(ctx, kubeletNode("moving"))
		Eventually(func(g Gomega) {
			n := getNode(ctx, g, "moving")
			g.Expect(n.Spec.Taints).NotTo(ContainElement(HaveField("Key", uninitialized.Key)))
			g.Expect(n.Status.Addresses).To(ContainElement(address(corev1.NodeInternalIP, "10.0.1.1")))
		}).Should(Succeed())

		By("the same addresses: passes run, nothing is written")
		// The API server would not change the node for an identical write: the controller's
		// status writes are counted.
		// A pass that listed the node before the cache had its addresses writes them again:
		// the count is read once a whole pass has run since (a pass's lookups and writes
		// finish before the next pass looks up).
		passes := func(n int) {
			asked := cloud.asked("moving")
			Eventually(func() int { return cloud.asked("moving") }).Should(BeNumerically(">=", asked+n))
		}
		passes(2)
		written := writes.count("moving")
		Expect(written).To(BeNumerically(">=", 1))
		passes(2)
		Expect(writes.count("moving")).To(Equal(written))

		By("the instance's address changes: the next pass writes it, nothing else touching the node")
		cloud.setAddresses("moving", address(corev1.NodeInternalIP, "10.0.1.2"), address(corev1.NodeExternalIP, "192.0.2.2"))
		Eventually(func(g Gomega) {
			g.Expect(getNode(ctx, g, "moving").Status.Addresses).To(Equal([]corev1.NodeAddress{
				address(corev1.NodeInternalIP, "10.0.1.2"), address(corev1.NodeExternalIP, "192.0.2.2"),
				address(corev1.NodeHostName, "moving-host"),
			}))
		}).Should(Succeed())
	})

	It("honours the kubelet's --node-ip (alpha.kubernetes.io/provided-node-ip), and keeps a node whose IP the instance lacks tainted", func(ctx SpecContext) {
		instance := cloudprovider.InstanceMetadata{ProviderID: "cloudnode-test://i-nodeip", NodeAddresses: []corev1.NodeAddress{
			address(corev1.NodeInternalIP, "10.0.2.1"), address(corev1.NodeInternalIP, "10.0.2.2"), address(corev1.NodeExternalIP, "192.0.2.3"),
		}}
		cloud.set("nodeip", instance)
		cloud.set("wrongip", instance)
		node := kubeletNode("nodeip")
		node.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.0.2.2"}
		register(ctx, node)
		wrong := kubeletNode("wrongip")
		wrong.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.0.2.9"}
		register(ctx, wrong)

		Eventually(func(g Gomega) {
			n := getNode(ctx, g, "nodeip")
			g.Expect(n.Spec.Taints).NotTo(ContainElement(HaveField("Key", uninitialized.Key)))
			g.Expect(n.Status.Addresses).To(Equal([]corev1.NodeAddress{
				address(corev1.NodeInternalIP, "10.0.2.2"), address(corev1.NodeExternalIP, "192.0.2.3"),
				address(corev1.NodeHostName, "nodeip-host"),
			}))
		}).Should(Succeed())
		Eventually(func() int { return cloud.asked("wrongip") }).Should(BeNumerically(">=", 2))
		n := getNode(ctx, Default, "wrongip")
		Expect(n.Spec.Taints).To(ContainElement(uninitialized))
		Expect(n.Spec.ProviderID).To(BeEmpty())
	})

	It("completes an initialised node's GA labels from its beta labels", func(ctx SpecContext) {
		register(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "beta", Labels: map[string]string{
			corev1.LabelFailureDomainBetaZone: "zone-b", corev1.LabelTopologyZone: "stale",
			corev1.LabelInstanceType: "m5.xlarge",
		}}})
		Eventually(func(g Gomega) {
			g.Expect(getNode(ctx, g, "beta").Labels).To(And(
				HaveKeyWithValue(corev1.LabelTopologyZone, "zone-b"),
				HaveKeyWithValue(corev1.LabelInstanceTypeStable, "m5.xlarge"),
				Not(HaveKey(corev1.LabelTopologyRegion)),
			))
		}).Should(Succeed())
	})
})

var _ = Describe("cloud-node-controller's flags", func() {
	// A negative count kcm's flag parsing refuses for every worker flag.
	It("refuses --concurrent-node-syncs=0 as upstream's cloud-controller-manager, once a provider is configured", func() {
		Expect(env.StartManager([]string{cloudnode.ControllerName}, "--cloud-provider="+testProvider, "--concurrent-node-syncs=0")).
			To(MatchError("setting up cloud-node-controller: concurrent-node-syncs must be a positive number"))
		// The witness: without a provider the controller does not run, and its flags decide nothing.
		Expect(env.StartManager([]string{cloudnode.ControllerName}, "--concurrent-node-syncs=0")).To(Succeed())
		Expect(env.StopManager()).To(Succeed())
	})
})

var _ = Describe("cloud-node-controller with a provider without instance lookups", func() {
	DescribeTable("does not run, and says so", func(ctx SpecContext, provider string) {
		// The log line is read from Ginkgo's writer, where the suite's logs go unless
		// KCM_TEST_LOG sends them to stderr.
		logs := &syncBuffer{}
		if os.Getenv("KCM_TEST_LOG") == "" {
			GinkgoWriter.TeeTo(logs)
			DeferCleanup(GinkgoWriter.ClearTeeWriters)
		}
		made := noInstancesMade.Load()
		// ttl-controller runs alongside: the witness that the node was seen.
		Expect(env.StartManager([]string{cloudnode.ControllerName, ttl.ControllerName}, "--cloud-provider="+provider)).To(Succeed())
		DeferCleanup(env.StopManager)
		if provider == noInstancesProvider {
			// The provider was made: the controller decided from what it offers.
			Expect(noInstancesMade.Load()).To(Equal(made + 1))
		}
		name := "uncloudy-" + provider
		register(ctx, kubeletNode(name))
		Eventually(func(g Gomega) {
			g.Expect(getNode(ctx, g, name).Annotations).To(HaveKey(corev1.ObjectTTLAnnotationKey))
		}).Should(Succeed())
		Expect(getNode(ctx, Default, name).Spec.Taints).To(ContainElement(uninitialized))
		Expect(testenv.Sample("running_managed_controllers", map[string]string{"name": "cloud-node", "manager": "kube-controller-manager"})).To(Equal(0.0))
		if os.Getenv("KCM_TEST_LOG") == "" {
			Expect(logs.String()).To(MatchRegexp(`"msg"="Warning: failed to start cloud node controller: cloud provider does not support instances".*"cloudProvider"="%s"`, provider))
		}
	},
		Entry("a fake without InstancesV2 or Instances", noInstancesProvider),
		Entry("kcm's pool", pool.ProviderName),
	)
})

// writes counts the status writes of the suite's first manager.
var writes *statusWrites

// statusWrites counts, per node, the status writes of the controller's client.
type statusWrites struct {
	client.Client
	mu     sync.Mutex
	byNode map[string]int
}

func (c *statusWrites) Status() client.SubResourceWriter {
	return statusWriter{SubResourceWriter: c.Client.Status(), c: c}
}

func (c *statusWrites) count(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byNode[node]
}

type statusWriter struct {
	client.SubResourceWriter
	c *statusWrites
}

func (w statusWriter) note(name string) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.byNode[name]++
}

func (w statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.note(obj.GetName())
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.note(obj.GetName())
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// syncBuffer is a bytes.Buffer safe for the manager's goroutines to log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
