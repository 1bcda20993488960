package endpointslice_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("endpointslice-controller", func() {
	It("lists ready, not-ready and terminating pods with upstream's conditions, node, zone, target and hostname", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		svc := service(ns, "web", "web", intstr.FromInt32(8080))
		svc.Labels = map[string]string{"tier": "front", discoveryv1.LabelManagedBy: "someone-else"}
		Expect(env.Client.Create(ctx, svc)).To(Succeed())

		createPod(ctx, ns, "ready", "web", podOpts{node: nodeA, ips: []string{"10.1.0.1"}, ready: true, hostname: "h1", subdomain: "web"})
		createPod(ctx, ns, "unready", "web", podOpts{node: nodeB, ips: []string{"10.1.0.2"}})
		term := createPod(ctx, ns, "terminating", "web", podOpts{node: nodeA, ips: []string{"10.1.0.3"}, ready: true, hold: true})
		Expect(env.Client.Delete(ctx, term)).To(Succeed())
		createPod(ctx, ns, "no-ip", "web", podOpts{node: nodeA})
		createPod(ctx, ns, "done", "web", podOpts{node: nodeA, ips: []string{"10.1.0.5"}, phase: corev1.PodSucceeded})
		createPod(ctx, ns, "other", "other", podOpts{node: nodeA, ips: []string{"10.1.0.6"}, ready: true})

		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "web")
			g.Expect(slices).To(HaveLen(1))
			s := slices[0]
			g.Expect(s.GenerateName).To(Equal("web-"))
			g.Expect(s.AddressType).To(Equal(discoveryv1.AddressTypeIPv4))
			g.Expect(s.Labels).To(Equal(map[string]string{
				"tier": "front", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
			}), "Service labels copied, reserved ones the controller's")
			g.Expect(metav1.IsControlledBy(&s, svc)).To(BeTrue())
			g.Expect(s.Ports).To(Equal([]discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}))

			eps := endpointsByPod(slices)
			g.Expect(eps).To(HaveLen(3), "no IP, finished and unselected pods are left out")
			g.Expect(conditions(eps["ready"])).To(Equal([3]bool{true, true, false}))
			g.Expect(conditions(eps["unready"])).To(Equal([3]bool{false, false, false}))
			g.Expect(conditions(eps["terminating"])).To(Equal([3]bool{false, true, true}), "ready is false while terminating")

			r := eps["ready"]
			g.Expect(r.Addresses).To(Equal([]string{"10.1.0.1"}))
			g.Expect(r.NodeName).To(Equal(ptr.To(nodeA)))
			g.Expect(r.Zone).To(Equal(ptr.To(zoneA)))
			g.Expect(r.Hostname).To(Equal(ptr.To("h1")), "hostname for a pod whose subdomain is the Service")
			g.Expect(r.TargetRef).To(HaveField("Kind", "Pod"))
			g.Expect(r.TargetRef.Namespace).To(Equal(ns))
			g.Expect(r.TargetRef.UID).NotTo(BeEmpty())
			g.Expect(eps["unready"].Zone).To(Equal(ptr.To(zoneB)))
			g.Expect(eps["unready"].Hostname).To(BeNil())
		}).Should(Succeed())

		By("the unready pod becoming Ready")
		p := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unready"}, p)).To(Succeed())
		// A transition time the previous syncs have not seen (they have second precision).
		setStatus(ctx, p, podOpts{ips: []string{"10.1.0.2"}, ready: true, since: time.Now().Add(2 * time.Second)})
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "web")
			g.Expect(conditions(endpointsByPod(slices)["unready"])).To(Equal([3]bool{true, true, false}))
			g.Expect(slices[0].Annotations).To(HaveKeyWithValue(corev1.EndpointsLastChangeTriggerTime,
				p.Status.Conditions[0].LastTransitionTime.UTC().Format(time.RFC3339Nano)), "the Ready transition that triggered the write")
		}).Should(Succeed())
	})

	It("marks not-ready and terminating pods ready when the Service publishes not-ready addresses", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		svc := service(ns, "pub", "pub", intstr.FromInt32(80))
		svc.Spec.PublishNotReadyAddresses = true
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		createPod(ctx, ns, "unready", "pub", podOpts{node: nodeA, ips: []string{"10.2.0.1"}})
		term := createPod(ctx, ns, "terminating", "pub", podOpts{node: nodeA, ips: []string{"10.2.0.2"}, hold: true})
		Expect(env.Client.Delete(ctx, term)).To(Succeed())
		Eventually(func(g Gomega) {
			eps := endpointsByPod(slicesOf(ctx, g, ns, "pub"))
			g.Expect(eps).To(HaveLen(2))
			g.Expect(conditions(eps["unready"])).To(Equal([3]bool{true, false, false}))
			g.Expect(conditions(eps["terminating"])).To(Equal([3]bool{true, false, true}))
		}).Should(Succeed())
	})

	It("puts pods that resolve a named targetPort differently in different slices", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		Expect(env.Client.Create(ctx, service(ns, "named", "named", intstr.FromString("web")))).To(Succeed())
		createPod(ctx, ns, "p8080", "named", podOpts{node: nodeA, ips: []string{"10.3.0.1"}, ready: true,
			ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}})
		createPod(ctx, ns, "p9090", "named", podOpts{node: nodeA, ips: []string{"10.3.0.2"}, ready: true,
			ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}})
		createPod(ctx, ns, "p8080b", "named", podOpts{node: nodeB, ips: []string{"10.3.0.3"}, ready: true,
			ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}})
		Eventually(func(g Gomega) {
			byPort := map[int32][]string{}
			for _, s := range slicesOf(ctx, g, ns, "named") {
				g.Expect(s.Ports).To(HaveLen(1))
				for _, ep := range s.Endpoints {
					byPort[*s.Ports[0].Port] = append(byPort[*s.Ports[0].Port], ep.TargetRef.Name)
				}
			}
			g.Expect(byPort).To(HaveLen(2))
			g.Expect(byPort[8080]).To(ConsistOf("p8080", "p8080b"))
			g.Expect(byPort[9090]).To(ConsistOf("p9090"))
		}).Should(Succeed())
	})

	It("splits 150 endpoints over two slices of at most 100, deletes a slice emptied by scale-down and refills the other before making a new one", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		Expect(env.Client.Create(ctx, service(ns, "big", "big", intstr.FromInt32(80)))).To(Succeed())
		for i := range 150 {
			createPod(ctx, ns, fmt.Sprintf("p%03d", i), "big", podOpts{node: nodeA, ips: []string{fmt.Sprintf("10.4.%d.%d", i/200, i%200+1)}, ready: true})
		}
		var small, large discoveryv1.EndpointSlice
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "big")
			g.Expect(slices).To(HaveLen(2))
			g.Expect(len(slices[0].Endpoints) + len(slices[1].Endpoints)).To(Equal(150))
			small, large = slices[0], slices[1]
			if len(small.Endpoints) > len(large.Endpoints) {
				small, large = large, small
			}
			// Pods come one by one, so the split need not be 100/50 (upstream's too).
			g.Expect(len(large.Endpoints)).To(BeNumerically("<=", 100))
		}).WithTimeout(time.Minute).Should(Succeed())
		remaining := len(large.Endpoints) - 60

		By("deleting the pods of the smaller slice and 60 of the larger")
		var doomed []string
		for _, ep := range small.Endpoints {
			doomed = append(doomed, ep.TargetRef.Name)
		}
		for _, ep := range large.Endpoints[:60] {
			doomed = append(doomed, ep.TargetRef.Name)
		}
		for _, name := range doomed {
			Expect(env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
				client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "big")
			g.Expect(slices).To(HaveLen(1), "the emptied slice is deleted")
			g.Expect(slices[0].Name).To(Equal(large.Name))
			g.Expect(slices[0].Endpoints).To(HaveLen(remaining))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("scaling up by 30: the remaining slice takes them")
		for i := range 30 {
			createPod(ctx, ns, fmt.Sprintf("q%03d", i), "big", podOpts{node: nodeB, ips: []string{fmt.Sprintf("10.4.9.%d", i+1)}, ready: true})
		}
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "big")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Name).To(Equal(large.Name))
			g.Expect(slices[0].Endpoints).To(HaveLen(remaining + 30))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("keeps one empty placeholder slice for a Service that selects nothing, and reuses it", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		Expect(env.Client.Create(ctx, service(ns, "empty", "nobody", intstr.FromInt32(80)))).To(Succeed())
		var placeholder discoveryv1.EndpointSlice
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "empty")
			g.Expect(slices).To(HaveLen(1))
			placeholder = slices[0]
			g.Expect(placeholder.Endpoints).To(BeEmpty())
			g.Expect(placeholder.Ports).To(BeEmpty())
			g.Expect(placeholder.AddressType).To(Equal(discoveryv1.AddressTypeIPv4))
		}).Should(Succeed())

		By("a pod appearing: the placeholder becomes its slice")
		p := createPod(ctx, ns, "late", "nobody", podOpts{node: nodeA, ips: []string{"10.6.0.1"}, ready: true})
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "empty")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Name).To(Equal(placeholder.Name))
			g.Expect(slices[0].Endpoints).To(HaveLen(1))
			g.Expect(slices[0].Ports).To(HaveLen(1))
		}).Should(Succeed())

		By("the pod going: back to the placeholder, in the same slice")
		Expect(env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "empty")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Name).To(Equal(placeholder.Name))
			g.Expect(slices[0].Endpoints).To(BeEmpty())
			g.Expect(slices[0].Ports).To(BeEmpty())
		}).Should(Succeed())
	})

	It("makes no slices for selector-less and ExternalName Services", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		manual := service(ns, "manual", "x", intstr.FromInt32(80))
		manual.Spec.Selector = nil
		Expect(env.Client.Create(ctx, manual)).To(Succeed())
		external := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", Selector: map[string]string{"app": "x"}},
		}
		Expect(env.Client.Create(ctx, external)).To(Succeed())
		createPod(ctx, ns, "x", "x", podOpts{node: nodeA, ips: []string{"10.11.0.1"}, ready: true})
		// A Service created after them gets its slice: the others had their chance.
		Expect(env.Client.Create(ctx, service(ns, "control", "x", intstr.FromInt32(80)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(endpointsByPod(slicesOf(ctx, g, ns, "control"))).To(HaveKey("x"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			list := &discoveryv1.EndpointSliceList{}
			g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
		}).Should(Succeed())
	})

	It("does not write slices when a sync changes nothing, and restores a slice a user edited or deleted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		svc := service(ns, "calm", "calm", intstr.FromInt32(80))
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		createPod(ctx, ns, "a", "calm", podOpts{node: nodeA, ips: []string{"10.7.0.1"}, ready: true})
		createPod(ctx, ns, "b", "calm", podOpts{node: nodeB, ips: []string{"10.7.0.2"}, ready: true})
		var before discoveryv1.EndpointSlice
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "calm")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Endpoints).To(HaveLen(2))
			before = slices[0]
		}).Should(Succeed())

		By("updating the Service (a sync) and a pod in ways that do not change endpoints")
		svc.Annotations = map[string]string{"touched": "yes"}
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		p := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, p)).To(Succeed())
		p.Labels["extra"] = "label"
		Expect(env.Client.Update(ctx, p)).To(Succeed())
		Consistently(func(g Gomega) string {
			slices := slicesOf(ctx, g, ns, "calm")
			g.Expect(slices).To(HaveLen(1))
			return slices[0].ResourceVersion
		}).WithTimeout(3 * time.Second).Should(Equal(before.ResourceVersion))

		By("a Service label change: written at once (so the syncs above did run and found nothing to do)")
		svc.Labels = map[string]string{"team": "blue"}
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "calm")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Labels).To(HaveKeyWithValue("team", "blue"))
			g.Expect(slices[0].Name).To(Equal(before.Name))
			before = slices[0]
		}).Should(Succeed())

		By("a user removing an endpoint: restored")
		edited := before.DeepCopy()
		edited.Endpoints = edited.Endpoints[:1]
		Expect(env.Client.Update(ctx, edited)).To(Succeed())
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "calm")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Endpoints).To(HaveLen(2))
		}).Should(Succeed())

		By("a user deleting the slice: a new one")
		Expect(env.Client.Delete(ctx, &before)).To(Succeed())
		Eventually(func(g Gomega) {
			slices := slicesOf(ctx, g, ns, "calm")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Name).NotTo(Equal(before.Name))
			g.Expect(endpointsByPod(slices)).To(HaveLen(2))
		}).Should(Succeed())
	})

	It("leaves out a pod on a missing node and reports FailedToUpdateEndpointSlices", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		Expect(env.Client.Create(ctx, service(ns, "ghost", "ghost", intstr.FromInt32(80)))).To(Succeed())
		createPod(ctx, ns, "real", "ghost", podOpts{node: nodeA, ips: []string{"10.8.0.1"}, ready: true})
		createPod(ctx, ns, "lost", "ghost", podOpts{node: "no-such-node", ips: []string{"10.8.0.2"}, ready: true})
		Eventually(func(g Gomega) {
			eps := endpointsByPod(slicesOf(ctx, g, ns, "ghost"))
			g.Expect(eps).To(HaveLen(1))
			g.Expect(eps).To(HaveKey("real"))
		}).Should(Succeed())
		env.ExpectEvent(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"}}, testenv.Event{Type: corev1.EventTypeWarning, Reason: "FailedToUpdateEndpointSlices",
			Message: Equal(fmt.Sprintf("Error updating Endpoint Slices for Service %s/ghost: skipping Pod lost for Service %s/ghost: Node no-such-node Not Found", ns, ns)), ReportingController: "endpoint-slice-controller"})
	})

	It("hints ready endpoints for their zone (and node) as trafficDistribution asks, and drops hints when it goes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		svc := service(ns, "close", "close", intstr.FromInt32(80))
		svc.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferSameNode)
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		createPod(ctx, ns, "a", "close", podOpts{node: nodeA, ips: []string{"10.9.0.1"}, ready: true})
		createPod(ctx, ns, "b", "close", podOpts{node: nodeB, ips: []string{"10.9.0.2"}})
		Eventually(func(g Gomega) {
			eps := endpointsByPod(slicesOf(ctx, g, ns, "close"))
			g.Expect(eps).To(HaveLen(2))
			g.Expect(eps["a"].Hints).To(Equal(&discoveryv1.EndpointHints{
				ForZones: []discoveryv1.ForZone{{Name: zoneA}}, ForNodes: []discoveryv1.ForNode{{Name: nodeA}},
			}))
			g.Expect(eps["b"].Hints).To(BeNil(), "not ready: no hints")
		}).Should(Succeed())

		By("PreferClose: zone hints only")
		svc.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(endpointsByPod(slicesOf(ctx, g, ns, "close"))["a"].Hints).To(Equal(&discoveryv1.EndpointHints{
				ForZones: []discoveryv1.ForZone{{Name: zoneA}},
			}))
		}).Should(Succeed())

		By("no trafficDistribution: no hints")
		svc.Spec.TrafficDistribution = nil
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(endpointsByPod(slicesOf(ctx, g, ns, "close"))["a"].Hints).To(BeNil())
		}).Should(Succeed())
	})

	It("allocates topology-aware hints by zone CPU for topology-mode Auto, with upstream's Events", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		svc := service(ns, "auto", "auto", intstr.FromInt32(80))
		svc.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto"}
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		// Equal CPU in both zones, three endpoints in zone A and one in B: one of A's is
		// hinted for B.
		for i, node := range []string{nodeA, nodeA, nodeA, nodeB} {
			createPod(ctx, ns, fmt.Sprintf("p%d", i), "auto", podOpts{node: node, ips: []string{fmt.Sprintf("10.10.0.%d", i+1)}, ready: true})
		}
		Eventually(func(g Gomega) {
			eps := endpointsByPod(slicesOf(ctx, g, ns, "auto"))
			g.Expect(eps).To(HaveLen(4))
			hinted := map[string]int{}
			for _, ep := range eps {
				g.Expect(ep.Hints).NotTo(BeNil())
				g.Expect(ep.Hints.ForZones).To(HaveLen(1))
				hinted[ep.Hints.ForZones[0].Name]++
			}
			g.Expect(hinted).To(Equal(map[string]int{zoneA: 2, zoneB: 2}))
		}).Should(Succeed())
		env.ExpectEvent(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auto"}}, testenv.Event{Type: corev1.EventTypeNormal, Reason: "TopologyAwareHintsEnabled",
			Message: Equal("Topology Aware Hints has been enabled, addressType: IPv4"), ReportingController: "endpoint-slice-controller"})

		By("the annotation going: hints removed, with an Event")
		svc.Annotations = nil
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, ep := range endpointsByPod(slicesOf(ctx, g, ns, "auto")) {
				g.Expect(ep.Hints).To(BeNil())
			}
		}).Should(Succeed())
		env.ExpectEvent(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auto"}}, testenv.Event{Type: corev1.EventTypeWarning, Reason: "TopologyAwareHintsDisabled",
			Message: Equal("Topology Aware Hints has been disabled, addressType: IPv4"), ReportingController: "endpoint-slice-controller"})
	})
})
