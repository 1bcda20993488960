//go:build e2e && linux

package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kcm's built-in cloud provider, pool (issue 22), gives type-LoadBalancer Services addresses
// from pools an operator lists in the ConfigMap kube-system/kcm-address-pools, through
// service-lb-controller (upstream cloud-controller-manager's service controller). The spec
// restarts the suite's kcm with --cloud-provider=pool added to kubeadm's arguments and writes
// the cluster-wide ConfigMap, so the container is Serial; kcm gets kubeadm's arguments again
// afterwards, once the spec's Services (and their finalizers) are gone.
var _ = Describe("LoadBalancer Services with the pool provider", Serial, func() {
	const (
		poolConfigMap = "kcm-address-pools"
		lbFinalizer   = "service.kubernetes.io/load-balancer-cleanup"
		// The Events' source.component: upstream's service controller's.
		serviceController = "service-controller"
		otherClass        = "example.com/other"
	)
	// The spec's pool: four addresses, for its namespace only, so that no other spec's
	// Service could take one.
	poolAddresses := []string{"198.51.100.10", "198.51.100.11", "198.51.100.12", "198.51.100.13"}

	It("get four distinct addresses for five Services, the fifth the first freed, keep them across a restart, and leave another loadBalancerClass alone", func(ctx SpecContext) {
		forbidden := len(forbiddenLines(kcm.LogPath))
		By("restarting kcm with kubeadm's arguments and --cloud-provider=pool")
		restartKCM(ctx, "--cloud-provider=pool")
		DeferCleanup(func(ctx SpecContext) {
			By("restarting kcm with kubeadm's arguments")
			restartKCM(ctx)
		})
		Eventually(ctx, func() []string { return controllersSetUp(kcm.LogPath) }).WithTimeout(time.Minute).
			Should(ContainElement("service-lb-controller"), "%s", kcm.State())

		ns := newNamespace(ctx)
		By("a pool of four addresses for the namespace " + ns)
		pools := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: poolConfigMap},
			// A range and a CIDR, whose every address is usable.
			Data: map[string]string{"pools": fmt.Sprintf("- name: e2e\n  addresses:\n  - %s-%s\n  - %s/31\n  namespaces:\n  - %s\n",
				poolAddresses[0], poolAddresses[1], poolAddresses[2], ns)},
		}
		Expect(cl.Create(ctx, pools)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, pools))).To(Succeed()) })

		// Every version of the namespace's Services, from before the first exists.
		history := watchServices(ctx, ns)
		// Run first: kcm, still with the pool, releases the Services' finalizers.
		DeferCleanup(func(ctx SpecContext) {
			Expect(cl.DeleteAllOf(ctx, &corev1.Service{}, client.InNamespace(ns))).To(Succeed())
			Eventually(ctx, func(g Gomega) []corev1.Service {
				list := &corev1.ServiceList{}
				g.Expect(cl.List(ctx, list, client.InNamespace(ns))).To(Succeed())
				return list.Items
			}).WithTimeout(time.Minute).Should(BeEmpty(), "the Services are deleted, their finalizers released; %s", kcm.State())
		})

		created := map[string]time.Time{}
		create := func(name, class string) *corev1.Service {
			GinkgoHelper()
			svc := loadBalancerService(ns, name, class)
			created[name] = time.Now()
			Expect(cl.Create(ctx, svc)).To(Succeed())
			return svc
		}
		get := func(name string) *corev1.Service {
			GinkgoHelper()
			svc := &corev1.Service{}
			Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
			return svc
		}
		// waitAddress waits until the Service has one address from the pool, ipMode VIP, and
		// the finalizer, and returns the address.
		waitAddress := func(name string) string {
			GinkgoHelper()
			var ip string
			Eventually(ctx, func(g Gomega) {
				svc := &corev1.Service{}
				g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
				g.Expect(svc.Status.LoadBalancer.Ingress).To(HaveExactElements(And(
					HaveField("IP", BeElementOf(poolAddresses)), HaveField("Hostname", BeEmpty()),
					HaveField("IPMode", HaveValue(Equal(corev1.LoadBalancerIPModeVIP))))), "Service %s's ingress", name)
				g.Expect(svc.Finalizers).To(ContainElement(lbFinalizer))
				ip = svc.Status.LoadBalancer.Ingress[0].IP
			}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "%s", kcm.State())
			return ip
		}
		// waitExhausted waits until the Service has been refused an address for want of one
		// (upstream's Event, with the pool's error), and expects it to have none.
		waitExhausted := func(svc *corev1.Service) {
			GinkgoHelper()
			Eventually(ctx, func(g Gomega) []corev1.Event {
				return serviceEvents(ctx, g, svc, "SyncLoadBalancerFailed")
			}).WithTimeout(time.Minute).Should(ContainElement(And(
				HaveField("Type", corev1.EventTypeWarning),
				HaveField("Source.Component", serviceController),
				HaveField("Message", And(
					HavePrefix("Error syncing load balancer: failed to ensure load balancer: "),
					ContainSubstring(`no address available in pool(s) "e2e" for IPv4`))))),
				"Service %s; %s", svc.Name, kcm.State())
			got := get(svc.Name)
			Expect(got.Status.LoadBalancer.Ingress).To(BeEmpty(), "Service %s refused an address has none", svc.Name)
			Expect(got.Finalizers).To(ContainElement(lbFinalizer), "added before the provider is asked, as upstream")
		}

		By("a Service of loadBalancerClass " + otherClass + ", which kcm's pool does not serve")
		other := create("other", otherClass)

		By("four Services get four distinct addresses from the pool")
		lbs := []string{"lb-0", "lb-1", "lb-2", "lb-3"}
		for _, name := range lbs {
			create(name, "")
		}
		addresses := map[string]string{}
		for _, name := range lbs {
			addresses[name] = waitAddress(name)
		}
		Expect(slices.Sorted(maps.Values(addresses))).To(Equal(poolAddresses), "every address of the pool, once: %v", addresses)
		Eventually(ctx, func(g Gomega) []corev1.Event {
			return serviceEvents(ctx, g, get("lb-0"), "")
		}).WithTimeout(30 * time.Second).Should(ContainElements(
			And(HaveField("Reason", "EnsuringLoadBalancer"), HaveField("Type", corev1.EventTypeNormal), HaveField("Source.Component", serviceController)),
			And(HaveField("Reason", "EnsuredLoadBalancer"), HaveField("Type", corev1.EventTypeNormal), HaveField("Source.Component", serviceController))))

		By("the fifth is told the pool is exhausted, and waits without an address")
		fifth := create("lb-4", "")
		waitExhausted(fifth)

		By("deleting lb-1: lb-4 gets the address it freed")
		freed := addresses["lb-1"]
		Expect(cl.Delete(ctx, get("lb-1"))).To(Succeed())
		deleted := time.Now()
		addresses["lb-4"] = waitAddress("lb-4")
		Expect(addresses["lb-4"]).To(Equal(freed))
		reassigned := history.firstAddressed("lb-4").Sub(deleted)
		delete(addresses, "lb-1")
		Eventually(ctx, func(g Gomega) []corev1.Service {
			list := &corev1.ServiceList{}
			g.Expect(cl.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}).WithTimeout(time.Minute).ShouldNot(ContainElement(HaveField("Name", "lb-1")), "lb-1 is gone, its finalizer released")

		By("restarting kcm (SIGTERM, then again with --cloud-provider=pool): no address changes")
		// The witness that the restarted kcm has seen the Services: it ensures each again, as
		// upstream does at startup, with an EnsuredLoadBalancer Event of its own.
		ensured := map[string][]types.UID{}
		kcm.Stop(30 * time.Second)
		// Taken once the old process has exited: a retry it still had queued could have
		// ensured a Service again after the snapshot.
		for name := range addresses {
			ensured[name] = eventUIDs(serviceEvents(ctx, Default, get(name), "EnsuredLoadBalancer"))
		}
		restartKCM(ctx, "--cloud-provider=pool")
		Eventually(ctx, func(g Gomega) {
			for name, before := range ensured {
				g.Expect(eventUIDs(serviceEvents(ctx, g, get(name), "EnsuredLoadBalancer"))).To(ContainElement(Not(BeElementOf(before))),
					"Service %s ensured again by the restarted kcm", name)
			}
		}).WithTimeout(time.Minute).Should(Succeed(), "%s", kcm.State())
		for name, ip := range addresses {
			Expect(get(name).Status.LoadBalancer.Ingress).To(HaveExactElements(HaveField("IP", ip)), "Service %s after the restart", name)
		}

		By("a new Service waits, the pool still full of the addresses kept, until one is freed")
		sixth := create("lb-5", "")
		waitExhausted(sixth)
		freed = addresses["lb-2"]
		Expect(cl.Delete(ctx, get("lb-2"))).To(Succeed())
		addresses["lb-5"] = waitAddress("lb-5")
		Expect(addresses["lb-5"]).To(Equal(freed))
		delete(addresses, "lb-2")

		By("the Service of " + otherClass + " has no finalizer, status or Event, though every Service created after it was served")
		got := get(other.Name)
		Expect(got.Finalizers).To(BeEmpty())
		Expect(got.Status.LoadBalancer).To(Equal(corev1.LoadBalancerStatus{}))
		Expect(serviceEvents(ctx, Default, got, "")).To(BeEmpty())
		Expect(history.versions(other.Name)).To(HaveLen(1), "only its creation was seen: nothing wrote it")

		By("no Service's address ever changed, across the deletions and the restart")
		Expect(history.changedAddresses()).To(BeEmpty())
		Expect(history.err()).NotTo(HaveOccurred(), "the watch ran through the spec")
		Expect(forbiddenLines(kcm.LogPath)).To(HaveLen(forbidden), "no request of service-lb-controller refused, in %s", kcm.LogPath)

		var latencies []string
		for _, name := range lbs {
			latencies = append(latencies, fmt.Sprintf("%s: %s", name, history.firstAddressed(name).Sub(created[name]).Round(time.Millisecond)))
		}
		AddReportEntry("LoadBalancer Service created -> address in status", strings.Join(latencies, ", "), ReportEntryVisibilityAlways)
		AddReportEntry("LoadBalancer address freed (Service deleted) -> waiting Service's address in status",
			reassigned.Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
	}, SpecTimeout(6*time.Minute))
})

// loadBalancerService is a Service of type LoadBalancer, of the loadBalancerClass if not empty.
func loadBalancerService(ns, name, class string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if class != "" {
		svc.Spec.LoadBalancerClass = ptr.To(class)
	}
	return svc
}

// serviceEvents lists the Events about the Service (this one, by UID), of the reason if not
// empty.
func serviceEvents(ctx context.Context, g Gomega, svc *corev1.Service, reason string) []corev1.Event {
	fields := client.MatchingFields{"involvedObject.uid": string(svc.UID)}
	if reason != "" {
		fields["reason"] = reason
	}
	list := &corev1.EventList{}
	g.Expect(cl.List(ctx, list, client.InNamespace(svc.Namespace), fields)).To(Succeed())
	return list.Items
}

func eventUIDs(events []corev1.Event) []types.UID {
	uids := make([]types.UID, 0, len(events))
	for _, e := range events {
		uids = append(uids, e.UID)
	}
	return uids
}

// serviceHistory is every version of a namespace's Services a watch delivered, in order.
type serviceHistory struct {
	mu   sync.Mutex
	seen []seenService
	// failed is why the watch ended before the spec did.
	failed error
}

type seenService struct {
	at  time.Time
	svc corev1.Service
}

// watchServices watches the namespace's Services until the spec ends.
func watchServices(ctx context.Context, ns string) *serviceHistory {
	GinkgoHelper()
	wc, err := client.NewWithWatch(local.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.ServiceList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	h := &serviceHistory{}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stopped:
				return
			case ev, ok := <-w.ResultChan():
				h.mu.Lock()
				switch {
				case !ok:
					h.failed = fmt.Errorf("the watch of Services in %s closed", ns)
				case ev.Type == watch.Error:
					h.failed = fmt.Errorf("the watch of Services in %s failed: %v", ns, ev.Object)
				default:
					if svc, isService := ev.Object.(*corev1.Service); isService {
						h.seen = append(h.seen, seenService{at: time.Now(), svc: *svc})
					}
				}
				failed := h.failed != nil
				h.mu.Unlock()
				if failed {
					return
				}
			}
		}
	}()
	DeferCleanup(func() {
		close(stopped)
		w.Stop()
		<-done
	})
	return h
}

func (h *serviceHistory) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

// versions are the versions of the Service seen (by name; the spec never recreates one).
func (h *serviceHistory) versions(name string) []corev1.Service {
	h.mu.Lock()
	defer h.mu.Unlock()
	var versions []corev1.Service
	for _, s := range h.seen {
		if s.svc.Name == name {
			versions = append(versions, s.svc)
		}
	}
	return versions
}

// firstAddressed is when the watch first delivered the Service with an address, or zero.
func (h *serviceHistory) firstAddressed(name string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.seen {
		if s.svc.Name == name && len(s.svc.Status.LoadBalancer.Ingress) > 0 {
			return s.at
		}
	}
	return time.Time{}
}

// changedAddresses describes every version of a Service, not being deleted, whose ingress
// differs from the first one it had: an address changed or taken away.
func (h *serviceHistory) changedAddresses() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := map[string][]corev1.LoadBalancerIngress{}
	var changed []string
	for _, s := range h.seen {
		ingress := s.svc.Status.LoadBalancer.Ingress
		if s.svc.DeletionTimestamp != nil {
			continue
		}
		was, had := first[s.svc.Name]
		switch {
		case !had && len(ingress) > 0:
			first[s.svc.Name] = ingress
		case had && !slices.EqualFunc(was, ingress, ingressEqual):
			changed = append(changed, fmt.Sprintf("%s at %s (resourceVersion %s): ingress %v, was %v",
				s.svc.Name, s.at.Format(time.StampMilli), s.svc.ResourceVersion, ingress, was))
		}
	}
	return changed
}

func ingressEqual(a, b corev1.LoadBalancerIngress) bool {
	return a.IP == b.IP && a.Hostname == b.Hostname && ptr.Deref(a.IPMode, "") == ptr.Deref(b.IPMode, "")
}
