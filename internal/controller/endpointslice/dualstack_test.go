package endpointslice_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The suite's API server has an IPv4 and an IPv6 service range (testenv.DualStack).
var _ = Describe("endpointslice-controller on a dual-stack cluster", func() {
	It("writes one slice per address family the Service asks for, each with the pods' addresses of that family", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "eps")
		dual := service(ns, "dual", "web", intstr.FromInt32(8080))
		dual.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		dual.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		Expect(env.Client.Create(ctx, dual)).To(Succeed())
		v6 := service(ns, "v6", "web", intstr.FromInt32(8080))
		v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		Expect(env.Client.Create(ctx, v6)).To(Succeed())

		createPod(ctx, ns, "a", "web", podOpts{node: nodeA, ips: []string{"10.7.0.1", "fd00:7::1"}, ready: true})
		createPod(ctx, ns, "b", "web", podOpts{node: nodeB, ips: []string{"10.7.0.2", "fd00:7::2"}, ready: true})

		addresses := func(g Gomega, svc string) map[discoveryv1.AddressType][]string {
			out := map[discoveryv1.AddressType][]string{}
			for _, s := range slicesOf(ctx, g, ns, svc) {
				for _, ep := range s.Endpoints {
					out[s.AddressType] = append(out[s.AddressType], ep.Addresses...)
				}
				if len(s.Endpoints) == 0 {
					out[s.AddressType] = []string{}
				}
			}
			return out
		}
		Eventually(func(g Gomega) {
			g.Expect(addresses(g, "dual")).To(MatchAllKeys(Keys{
				discoveryv1.AddressTypeIPv4: ConsistOf("10.7.0.1", "10.7.0.2"),
				discoveryv1.AddressTypeIPv6: ConsistOf("fd00:7::1", "fd00:7::2"),
			}))
			g.Expect(addresses(g, "v6")).To(MatchAllKeys(Keys{
				discoveryv1.AddressTypeIPv6: ConsistOf("fd00:7::1", "fd00:7::2"),
			}), "an IPv6-only Service gets IPv6 slices only")
		}).Should(Succeed())
	})
})
