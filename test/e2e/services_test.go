//go:build e2e && linux

package e2e_test

import (
	"context"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("Services", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("list a Deployment's pods in their EndpointSlice as they become Ready, and drop them on scale-down", func(ctx SpecContext) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		Expect(cl.Create(ctx, svc)).To(Succeed())
		By("an empty placeholder slice before any pod exists")
		Eventually(ctx, func(g Gomega) {
			slices := serviceSlices(ctx, g, ns, "web")
			g.Expect(slices).To(HaveLen(1))
			g.Expect(slices[0].Endpoints).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed(), "logs in %s", logDir)

		Expect(cl.Create(ctx, newDeployment(ns, "web", 3))).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 3)
		expectReadyEndpointsAreLivePods(ctx, ns, 3)

		By("scaling the Deployment to 1")
		d := &appsv1.Deployment{}
		Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To[int32](1)
		Expect(cl.Patch(ctx, d, patch)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 1)
		expectReadyEndpointsAreLivePods(ctx, ns, 1)
	})
})

// serviceSlices lists the endpointslice-controller's slices of a Service.
func serviceSlices(ctx context.Context, g Gomega, ns, name string) []discoveryv1.EndpointSlice {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(cl.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
		discoveryv1.LabelServiceName: name,
		discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
	})).To(Succeed())
	return list.Items
}

// expectReadyEndpointsAreLivePods waits until the ready endpoints of Service web are
// exactly the IPs of its n live, Ready pods, on port 8080.
func expectReadyEndpointsAreLivePods(ctx context.Context, ns string, n int) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		var podIPs []string
		for _, p := range livePods(g, ns, map[string]string{"app": "web"}) {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			if ready && p.Status.PodIP != "" {
				podIPs = append(podIPs, p.Status.PodIP)
			}
		}
		g.Expect(podIPs).To(HaveLen(n), "Ready pods with an IP")

		var endpointIPs []string
		for _, s := range serviceSlices(ctx, g, ns, "web") {
			g.Expect(s.AddressType).To(Equal(discoveryv1.AddressTypeIPv4))
			g.Expect(s.Ports).To(HaveLen(1))
			g.Expect(*s.Ports[0].Port).To(BeEquivalentTo(8080))
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					g.Expect(ep.TargetRef).NotTo(BeNil())
					g.Expect(ep.NodeName).NotTo(BeNil())
					endpointIPs = append(endpointIPs, ep.Addresses...)
				}
			}
		}
		sort.Strings(podIPs)
		sort.Strings(endpointIPs)
		g.Expect(endpointIPs).To(Equal(podIPs))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
}
