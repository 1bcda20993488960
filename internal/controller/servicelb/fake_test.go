package servicelb_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/cloud-provider/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/servicelb"
	"github.com/kcm/kcm/internal/testenv"
)

const (
	// fakeProvider is the name the suite registers its provider under.
	fakeProvider = "servicelb-suite-fake"
	// fakeClass is the fake provider's own loadBalancerClass.
	fakeClass   = "suite.kcm.io/lb"
	clusterName = "suite-cluster"
	externalIP  = "192.0.2.10"
)

// lbCall is one call the controller made to the provider's load balancers.
type lbCall struct {
	op, cluster string
	hosts       []string
}

// lbCloud is k8s.io/cloud-provider/fake's Cloud, its load balancer calls recorded per
// Service and made safe for the controller's concurrent workers, with an error a spec can
// make one Service's EnsureLoadBalancer and UpdateLoadBalancer return. It serves a
// loadBalancerClass of its own besides class-less Services.
type lbCloud struct {
	*fake.Cloud
	mu    sync.Mutex
	fail  map[string]error
	calls map[string][]lbCall
	// busy counts the EnsureLoadBalancer calls per Service still to answer with an
	// api.RetryError of busyDelay.
	busy map[string]int
}

const busyDelay = 200 * time.Millisecond

var provider = &lbCloud{
	Cloud: &fake.Cloud{Exists: true, ExternalIP: net.ParseIP(externalIP), BalancerIPMode: ptr.To(corev1.LoadBalancerIPModeVIP)},
	fail:  map[string]error{},
	calls: map[string][]lbCall{},
	busy:  map[string]int{},
}

func init() {
	cloudprovider.RegisterCloudProvider(fakeProvider, func(io.Reader) (cloudprovider.Interface, error) { return provider, nil })
}

func (c *lbCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }
func (c *lbCloud) LoadBalancerClass() string                        { return fakeClass }

func (c *lbCloud) record(op, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	key := svc.Namespace + "/" + svc.Name
	call := lbCall{op: op, cluster: cluster, hosts: []string{}}
	for _, n := range nodes {
		call.hosts = append(call.hosts, n.Name)
	}
	c.calls[key] = append(c.calls[key], call)
	if op == "delete" {
		return nil
	}
	return c.fail[key]
}

func (c *lbCloud) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.GetLoadBalancer(ctx, cluster, svc)
}

func (c *lbCloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record("ensure", cluster, svc, nodes); err != nil {
		return nil, err
	}
	if key := svc.Namespace + "/" + svc.Name; c.busy[key] > 0 {
		c.busy[key]--
		return nil, api.NewRetryError("load balancer busy", busyDelay)
	}
	return c.Cloud.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

func (c *lbCloud) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record("update", cluster, svc, nodes); err != nil {
		return err
	}
	return c.Cloud.UpdateLoadBalancer(ctx, cluster, svc, nodes)
}

func (c *lbCloud) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.record("delete", cluster, svc, nil)
	return c.Cloud.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

// callsOf returns the calls made for svc with operation op.
func (c *lbCloud) callsOf(svc *corev1.Service, op string) []lbCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []lbCall
	for _, call := range c.calls[svc.Namespace+"/"+svc.Name] {
		if call.op == op {
			out = append(out, call)
		}
	}
	return out
}

func (c *lbCloud) setFail(svc *corev1.Service, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail[svc.Namespace+"/"+svc.Name] = err
}

// ensured waits until svc has the finalizer and the fake's status.
func ensured(svc *corev1.Service) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := get(g, svc)
		g.Expect(hasFinalizer(cur)).To(BeTrue(), "finalizer")
		g.Expect(cur.Status.LoadBalancer.Ingress).To(HaveLen(1))
		g.Expect(cur.Status.LoadBalancer.Ingress[0].IP).To(Equal(externalIP))
	}).Should(Succeed())
}

var _ = Describe("service-lb-controller with a cloud provider", Ordered, func() {
	ctx := context.Background()
	var namespaces []string
	namespace := func(prefix string) string {
		ns := env.Namespace(ctx, prefix)
		namespaces = append(namespaces, ns)
		return ns
	}

	BeforeAll(func() {
		// Two nodes take traffic; the third is excluded by its label.
		env.Node(ctx, "fake-a")
		env.Node(ctx, "fake-b", testenv.NodeLabels(map[string]string{corev1.LabelNodeExcludeBalancers: "false"}))
		env.Node(ctx, "fake-excluded", testenv.NodeLabels(map[string]string{corev1.LabelNodeExcludeBalancers: "true"}))
		Expect(env.StartManager([]string{servicelb.ControllerName},
			"--cloud-provider="+fakeProvider, "--cluster-name="+clusterName)).To(Succeed())
		DeferCleanup(func() {
			// Finalizers are lifted by the controller: it still runs.
			deleteServices(ctx, namespaces...)
			Expect(env.StopManager()).To(Succeed())
		})
	})

	It("gives a LoadBalancer Service the finalizer, then the provider's load balancer on the included nodes and its status, with upstream's Events", func() {
		ns := namespace("ensure")
		svc := newLB(ns, "web")
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := get(g, svc)
			g.Expect(cur.Finalizers).To(ConsistOf("service.kubernetes.io/load-balancer-cleanup"))
			g.Expect(cur.Status.LoadBalancer.Ingress).To(Equal([]corev1.LoadBalancerIngress{{
				IP: externalIP, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP),
				Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}},
			}}))
		}).Should(Succeed())

		calls := provider.callsOf(svc, "ensure")
		Expect(calls).To(HaveLen(1))
		Expect(calls[0].cluster).To(Equal(clusterName), "--cluster-name")
		Expect(calls[0].hosts).To(ContainElements("fake-a", "fake-b"))
		Expect(calls[0].hosts).NotTo(ContainElement("fake-excluded"))
		Eventually(func(g Gomega) {
			g.Expect(events(g, ns, "web")).To(ConsistOf(
				"Normal EnsuringLoadBalancer: Ensuring load balancer",
				"Normal EnsuredLoadBalancer: Ensured load balancer"))
		}).Should(Succeed())
	})

	It("updates a load balancer's hosts when a node joins or is excluded, with the Event", func() {
		ns := namespace("nodes")
		svc := newLB(ns, "web")
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		ensured(svc)
		syncs := testenv.Sample("service_controller_loadbalancer_sync_total", nil)

		env.Node(ctx, "fake-c")
		Eventually(func(g Gomega) {
			updates := provider.callsOf(svc, "update")
			g.Expect(updates).NotTo(BeEmpty())
			g.Expect(updates[len(updates)-1].hosts).To(ContainElements("fake-a", "fake-b", "fake-c"))
			g.Expect(updates[len(updates)-1].cluster).To(Equal(clusterName))
			g.Expect(events(g, ns, "web")).To(ContainElement("Normal UpdatedLoadBalancer: Updated load balancer with new hosts"))
		}).Should(Succeed())
		Expect(testenv.Sample("service_controller_loadbalancer_sync_total", nil)).To(BeNumerically(">", syncs))
		// The node sync is no full sync: the load balancer was ensured once.
		Expect(provider.callsOf(svc, "ensure")).To(HaveLen(1))

		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "fake-c"}, node)).To(Succeed())
		node.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: "true"}
		Expect(env.Client.Update(ctx, node)).To(Succeed())
		Eventually(func(g Gomega) {
			updates := provider.callsOf(svc, "update")
			g.Expect(updates[len(updates)-1].hosts).To(ContainElements("fake-a", "fake-b"))
			g.Expect(updates[len(updates)-1].hosts).NotTo(ContainElement("fake-c"))
		}).Should(Succeed())
	})

	It("deletes the load balancer of a Service changed to ClusterIP, clears its status and lifts the finalizer", func() {
		ns := namespace("type")
		svc := newLB(ns, "web")
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		ensured(svc)

		Eventually(func(g Gomega) {
			cur := get(g, svc)
			cur.Spec.Type = corev1.ServiceTypeClusterIP
			cur.Spec.ExternalTrafficPolicy = ""
			cur.Spec.AllocateLoadBalancerNodePorts = nil
			for i := range cur.Spec.Ports {
				cur.Spec.Ports[i].NodePort = 0
			}
			g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := get(g, svc)
			g.Expect(hasFinalizer(cur)).To(BeFalse())
			g.Expect(cur.Status.LoadBalancer).To(Equal(corev1.LoadBalancerStatus{}))
			g.Expect(provider.callsOf(svc, "delete")).To(HaveLen(1))
			g.Expect(events(g, ns, "web")).To(ContainElements(
				"Normal DeletingLoadBalancer: Deleting load balancer",
				"Normal DeletedLoadBalancer: Deleted load balancer"))
		}).Should(Succeed())
	})

	It("deletes the load balancer of a deleted Service before the Service goes", func() {
		ns := namespace("delete")
		svc := newLB(ns, "web")
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		ensured(svc)

		Expect(env.Client.Delete(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(err).To(HaveOccurred(), "the Service is gone")
		}).Should(Succeed())
		Expect(provider.callsOf(svc, "delete")).To(HaveLen(1))
		Eventually(func(g Gomega) {
			g.Expect(events(g, ns, "web")).To(ContainElements(
				"Normal DeletingLoadBalancer: Deleting load balancer",
				"Normal DeletedLoadBalancer: Deleted load balancer"))
		}).Should(Succeed())
	})

	It("reports a provider's error as SyncLoadBalancerFailed and retries until the provider succeeds", func() {
		ns := namespace("fail")
		svc := newLB(ns, "web")
		provider.setFail(svc, errors.New("quota exceeded"))
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(events(g, ns, "web")).To(ContainElement(
				"Warning SyncLoadBalancerFailed: Error syncing load balancer: failed to ensure load balancer: quota exceeded"))
		}).Should(Succeed())
		cur := &corev1.Service{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svc), cur)).To(Succeed())
		Expect(hasFinalizer(cur)).To(BeTrue(), "the finalizer comes before the load balancer")
		Expect(cur.Status.LoadBalancer.Ingress).To(BeEmpty())

		provider.setFail(svc, nil)
		ensured(svc)
		Expect(len(provider.callsOf(svc, "ensure"))).To(BeNumerically(">=", 2))
	})

	It("retries after a provider's api.RetryError's delay, not the backoff", func() {
		ns := namespace("retry")
		svc := newLB(ns, "web")
		// Four busy answers: with the 5s..300s backoff instead of the delay, the fifth call
		// would come 75s later, past the wait.
		provider.mu.Lock()
		provider.busy[ns+"/web"] = 4
		provider.mu.Unlock()
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		ensured(svc)
		Expect(provider.callsOf(svc, "ensure")).To(HaveLen(5))
		Eventually(func(g Gomega) {
			g.Expect(events(g, ns, "web")).To(ContainElement(
				"Warning SyncLoadBalancerFailed: Error syncing load balancer: failed to ensure load balancer: load balancer busy"))
		}).Should(Succeed())
	})

	It("serves the provider's own class and leaves another class alone", func() {
		ns := namespace("class")
		other := newLB(ns, "other", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") })
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		own := newLB(ns, "own", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To(fakeClass) })
		Expect(env.Client.Create(ctx, own)).To(Succeed())
		// The witness: created after the other class's Service, served.
		witness := newLB(ns, "witness")
		Expect(env.Client.Create(ctx, witness)).To(Succeed())
		ensured(own)
		ensured(witness)

		// A change that would sync a served Service's load balancer.
		Eventually(func(g Gomega) {
			cur := get(g, other)
			cur.Annotations = map[string]string{"touched": "yes"}
			g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := get(g, witness)
			cur.Annotations = map[string]string{"touched": "yes"}
			g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(func() []lbCall { return provider.callsOf(witness, "ensure") }).Should(HaveLen(2))

		cur := &corev1.Service{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(other), cur)).To(Succeed())
		Expect(cur.Finalizers).To(BeEmpty())
		Expect(cur.Status.LoadBalancer.Ingress).To(BeEmpty())
		Expect(events(Default, ns, "other")).To(BeEmpty())
		Expect(provider.callsOf(other, "ensure")).To(BeEmpty())
		Expect(provider.callsOf(other, "update")).To(BeEmpty())
	})
})
