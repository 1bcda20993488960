package servicelb_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/controller/servicelb"
	"github.com/kcm/kcm/internal/setup"
)

// addresses are the IPs of svc's status.loadBalancer.ingress, each with ipMode VIP.
func addresses(g Gomega, svc *corev1.Service) []string {
	var out []string
	for _, in := range get(g, svc).Status.LoadBalancer.Ingress {
		g.Expect(in.IPMode).To(Equal(ptr.To(corev1.LoadBalancerIPModeVIP)), "ipMode")
		out = append(out, in.IP)
	}
	return out
}

// ensuredCount is how many times the controller reported EnsuredLoadBalancer for the Service
// named name (Events aggregated by the recorder carry a count).
func ensuredCount(g Gomega, ns, name string) int32 {
	list := &corev1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == "EnsuredLoadBalancer" {
			n += max(e.Count, 1)
		}
	}
	return n
}

var _ = Describe("service-lb-controller with the pool provider", Ordered, func() {
	ctx := context.Background()
	var ns, dualNS string
	four := []string{"192.0.2.100", "192.0.2.101", "192.0.2.102", "192.0.2.103"}
	svcs := map[string]*corev1.Service{}
	held := map[string]string{}

	// A failed sync waits far longer than any Eventually, so that a waiting Service can only
	// get a freed address promptly through the requeue on release, not through its backoff.
	slowRetries := setup.OverrideFor(servicelb.ControllerName, func(r *servicelb.Reconciler) {
		r.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Hour, time.Hour)
	})
	start := func() {
		GinkgoHelper()
		Expect(env.StartManagerWith([]string{servicelb.ControllerName}, []string{"--cloud-provider=" + pool.ProviderName}, slowRetries)).To(Succeed())
	}

	BeforeAll(func() {
		ns = env.Namespace(ctx, "pool")
		dualNS = env.Namespace(ctx, "pool-dual")
		pools := fmt.Sprintf(`- name: four
  addresses: ["192.0.2.100-192.0.2.103"]
  namespaces: [%s]
- name: dual
  addresses: ["198.51.100.7", "2001:db8::7/128"]
  namespaces: [%s]
`, ns, dualNS)
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: pool.ConfigMapNamespace, Name: pool.DefaultConfigMap},
			Data:       map[string]string{pool.PoolsKey: pools},
		})).To(Succeed())
		start()
		DeferCleanup(func() {
			deleteServices(ctx, ns, dualNS)
			Expect(env.StopManager()).To(Succeed())
		})
	})

	It("gives four Services the pool's four addresses, and the fifth SyncLoadBalancerFailed naming the exhausted pool", func() {
		var took []time.Duration
		for i := 1; i <= 4; i++ {
			name := fmt.Sprintf("svc-%d", i)
			svcs[name] = newLB(ns, name)
			created := time.Now()
			Expect(env.Client.Create(ctx, svcs[name])).To(Succeed())
			Eventually(func(g Gomega) []string { return addresses(g, svcs[name]) }).Should(HaveLen(1))
			took = append(took, time.Since(created))
			Expect(hasFinalizer(get(Default, svcs[name]))).To(BeTrue())
			held[name] = addresses(Default, svcs[name])[0]
		}
		AddReportEntry("Service created -> address in status", fmt.Sprint(took))
		Expect(held).To(HaveLen(4))
		var distinct []string
		for _, ip := range held {
			distinct = append(distinct, ip)
		}
		Expect(distinct).To(ConsistOf(four))

		svcs["svc-5"] = newLB(ns, "svc-5")
		Expect(env.Client.Create(ctx, svcs["svc-5"])).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(events(g, ns, "svc-5")).To(ContainElement(And(
				HavePrefix("Warning SyncLoadBalancerFailed: Error syncing load balancer: failed to ensure load balancer: no address available"),
				ContainSubstring("four"))))
		}).Should(Succeed())
		Expect(addresses(Default, svcs["svc-5"])).To(BeEmpty())
	})

	It("gives the waiting Service the address a deleted one frees, at once", func() {
		freed := held["svc-2"]
		Expect(env.Client.Delete(ctx, svcs["svc-2"])).To(Succeed())
		delete(held, "svc-2")
		Eventually(func(g Gomega) []string { return addresses(g, svcs["svc-5"]) }).Should(Equal([]string{freed}))
		held["svc-5"] = freed
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(svcs["svc-2"]), &corev1.Service{})
		}).Should(Satisfy(func(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }))
	})

	It("changes no address when the manager restarts", func() {
		before := map[string]int32{}
		for name := range held {
			before[name] = ensuredCount(Default, ns, name)
		}
		Expect(env.StopManager()).To(Succeed())
		start()
		// The restarted controller ensures every Service again; the provider, rebuilt from
		// their status, gives each the address it had, and a new Service none.
		Eventually(func(g Gomega) {
			for name := range held {
				g.Expect(ensuredCount(g, ns, name)).To(BeNumerically(">", before[name]), name)
			}
		}).Should(Succeed())
		for name, ip := range held {
			Expect(addresses(Default, svcs[name])).To(Equal([]string{ip}), name)
		}
		svcs["svc-6"] = newLB(ns, "svc-6")
		Expect(env.Client.Create(ctx, svcs["svc-6"])).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(events(g, ns, "svc-6")).To(ContainElement(ContainSubstring("no address available")))
		}).Should(Succeed())
		for name, ip := range held {
			Expect(addresses(Default, svcs[name])).To(Equal([]string{ip}), name)
		}
	})

	It("gives a dual-stack Service one address of each family", func() {
		svc := newLB(dualNS, "dual", func(s *corev1.Service) {
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
		})
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) []string { return addresses(g, svc) }).Should(HaveLen(2))
		got := addresses(Default, svc)
		Expect(got).To(ConsistOf("198.51.100.7", "2001:db8::7"))
		// In the order of spec.ipFamilies.
		Expect(netip.MustParseAddr(got[0]).Is6()).To(BeTrue(), "IPv6 first, as spec.ipFamilies")
	})
})
