package endpointslicemirroring_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("endpointslice-mirroring-controller", func() {
	It("mirrors a user's Endpoints into one slice per address type, with its labels, annotations, ports and addresses", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "ext", nil)
		ep := &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ext", Labels: map[string]string{"team": "blue"},
				Annotations: map[string]string{"note": "kept", corev1.LastAppliedConfigAnnotation: "{}",
					corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z"}},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{
					{IP: "10.0.0.1", Hostname: "one", NodeName: new("node-1")},
					{IP: "fd00::1"},
				},
				NotReadyAddresses: addresses("10.0.0.2"),
				Ports:             webPort,
			}},
		}
		Expect(env.Client.Create(ctx, ep)).To(Succeed())

		Eventually(func(g Gomega) {
			got := mirrored(ctx, g, ns, "ext")
			g.Expect(got).To(HaveLen(2))
			v4, v6 := got[discoveryv1.AddressTypeIPv4], got[discoveryv1.AddressTypeIPv6]
			g.Expect(readiness(v4)).To(Equal([]string{"10.0.0.1 true", "10.0.0.2 false"}))
			g.Expect(readiness(v6)).To(Equal([]string{"fd00::1 true"}))
			for _, s := range []discoveryv1.EndpointSlice{v4, v6} {
				g.Expect(s.Name).To(HavePrefix("ext-"))
				g.Expect(s.Labels).To(Equal(map[string]string{"team": "blue",
					discoveryv1.LabelServiceName: "ext", discoveryv1.LabelManagedBy: "endpointslicemirroring-controller.k8s.io"}))
				g.Expect(s.Annotations).To(Equal(map[string]string{"note": "kept"}))
				g.Expect(s.Ports).To(HaveLen(1))
				g.Expect([]any{*s.Ports[0].Name, *s.Ports[0].Port, *s.Ports[0].Protocol}).To(Equal([]any{"web", int32(8080), corev1.ProtocolTCP}))
				g.Expect(s.OwnerReferences).To(HaveLen(1))
				owner := s.OwnerReferences[0]
				g.Expect([]any{owner.Kind, owner.Name, owner.UID, *owner.Controller}).To(Equal([]any{"Endpoints", "ext", ep.UID, true}))
			}
			for _, e := range v4.Endpoints {
				if e.Addresses[0] == "10.0.0.1" {
					g.Expect(*e.Hostname).To(Equal("one"))
					g.Expect(*e.NodeName).To(Equal("node-1"))
				}
			}
		}).Should(Succeed())
	})

	It("updates the slice in place when the Endpoints changes, and never rewrites an unchanged one", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "ext", nil)
		ep := createEndpoints(ctx, ns, "ext", nil, corev1.EndpointSubset{Addresses: addresses("10.0.0.1", "10.0.0.2"), Ports: webPort})
		var first discoveryv1.EndpointSlice
		Eventually(func(g Gomega) {
			first = mirrored(ctx, g, ns, "ext")[discoveryv1.AddressTypeIPv4]
			g.Expect(readiness(first)).To(Equal([]string{"10.0.0.1 true", "10.0.0.2 true"}))
		}).Should(Succeed())

		By("reordering the slice's endpoints (same content), then changing only the Endpoints' trigger time")
		slices.Reverse(first.Endpoints)
		Expect(env.Client.Update(ctx, &first)).To(Succeed())
		ep.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z"}
		Expect(env.Client.Update(ctx, ep)).To(Succeed())
		// A rewrite would be visible: the controller writes endpoints sorted.
		Consistently(func(g Gomega) {
			s := mirrored(ctx, g, ns, "ext")[discoveryv1.AddressTypeIPv4]
			g.Expect(s.ResourceVersion).To(Equal(first.ResourceVersion))
			g.Expect(s.Endpoints[0].Addresses).To(Equal([]string{"10.0.0.2"}))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("adding an address and marking the first not ready")
		ep.Subsets = []corev1.EndpointSubset{{Addresses: addresses("10.0.0.2", "10.0.0.3"), NotReadyAddresses: addresses("10.0.0.1"), Ports: webPort}}
		Expect(env.Client.Update(ctx, ep)).To(Succeed())
		Eventually(func(g Gomega) {
			s := mirrored(ctx, g, ns, "ext")[discoveryv1.AddressTypeIPv4]
			g.Expect(readiness(s)).To(Equal([]string{"10.0.0.1 false", "10.0.0.2 true", "10.0.0.3 true"}))
			g.Expect(s.Name).To(Equal(first.Name), "updated in place")
		}).Should(Succeed())
	})

	It("mirrors nothing for an Endpoints labelled skip-mirror, and deletes what it mirrored when the label comes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "skipped", nil)
		createEndpoints(ctx, ns, "skipped", map[string]string{discoveryv1.LabelSkipMirror: "true"},
			corev1.EndpointSubset{Addresses: addresses("10.0.0.1"), Ports: webPort})
		expectNoSlices(ctx, ns, "skipped")

		createService(ctx, ns, "later", nil)
		ep := createEndpoints(ctx, ns, "later", nil, corev1.EndpointSubset{Addresses: addresses("10.0.0.1"), Ports: webPort})
		Eventually(func(g Gomega) {
			g.Expect(mirrored(ctx, g, ns, "later")).To(HaveLen(1))
		}).Should(Succeed())
		ep.Labels = map[string]string{discoveryv1.LabelSkipMirror: "true"}
		Expect(env.Client.Update(ctx, ep)).To(Succeed())
		expectNoSlices(ctx, ns, "later")
	})

	It("does not mirror the Endpoints of a Service with a selector, and deletes the slices when a selector comes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "selected", map[string]string{"app": "x"})
		createEndpoints(ctx, ns, "selected", nil, corev1.EndpointSubset{Addresses: addresses("10.0.0.1"), Ports: webPort})
		expectNoSlices(ctx, ns, "selected")

		svc := createService(ctx, ns, "gains", nil)
		createEndpoints(ctx, ns, "gains", nil, corev1.EndpointSubset{Addresses: addresses("10.0.0.1"), Ports: webPort})
		Eventually(func(g Gomega) {
			g.Expect(mirrored(ctx, g, ns, "gains")).To(HaveLen(1))
		}).Should(Succeed())
		svc.Spec.Selector = map[string]string{"app": "x"}
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		expectNoSlices(ctx, ns, "gains")
	})

	It("mirrors an Endpoints only once its Service exists", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createEndpoints(ctx, ns, "early", nil, corev1.EndpointSubset{Addresses: addresses("10.0.0.1"), Ports: webPort})
		expectNoSlices(ctx, ns, "early")
		createService(ctx, ns, "early", nil)
		Eventually(func(g Gomega) {
			g.Expect(readiness(mirrored(ctx, g, ns, "early")[discoveryv1.AddressTypeIPv4])).To(Equal([]string{"10.0.0.1 true"}))
		}).Should(Succeed())
	})

	It("deletes the mirrored slices when the Endpoints is deleted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "gone", nil)
		ep := createEndpoints(ctx, ns, "gone", nil, corev1.EndpointSubset{Addresses: addresses("10.0.0.1", "fd00::1"), Ports: webPort})
		Eventually(func(g Gomega) {
			g.Expect(mirrored(ctx, g, ns, "gone")).To(HaveLen(2))
		}).Should(Succeed())
		Expect(env.Client.Delete(ctx, ep)).To(Succeed())
		expectNoSlices(ctx, ns, "gone")
	})

	It("mirrors at most --mirroring-max-endpoints-per-subset addresses per subset, ready first, with a TooManyAddressesToMirror Event", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "mirror")
		createService(ctx, ns, "many", nil)
		createEndpoints(ctx, ns, "many", nil, corev1.EndpointSubset{
			Addresses:         addresses("10.0.0.1", "10.0.0.2", "10.0.0.3"),
			NotReadyAddresses: addresses("10.0.1.1", "10.0.1.2", "10.0.1.3"),
			Ports:             webPort,
		})
		Eventually(func(g Gomega) {
			s := mirrored(ctx, g, ns, "many")[discoveryv1.AddressTypeIPv4]
			g.Expect(s.Endpoints).To(HaveLen(maxPerSubset))
			ready := 0
			for _, e := range s.Endpoints {
				if *e.Conditions.Ready {
					ready++
				}
			}
			g.Expect(ready).To(Equal(3), "ready addresses are mirrored first")
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "Endpoints" && e.Regarding.Name == "many" && e.Reason == "TooManyAddressesToMirror" && e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(fmt.Sprintf(
				"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. 2 addresses were skipped", maxPerSubset)))
		}).Should(Succeed())
	})
})
