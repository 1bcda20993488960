package endpointslicemirroring_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/endpointslicemirroring"
)

func createService(ctx context.Context, ns, name string, selector map[string]string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports:    []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	Expect(env.Client.Create(ctx, svc)).To(Succeed())
	return svc
}

func addresses(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

func createEndpoints(ctx context.Context, ns, name string, labels map[string]string, subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Subsets: subsets}
	Expect(env.Client.Create(ctx, ep)).To(Succeed())
	return ep
}

var webPort = []corev1.EndpointPort{{Name: "web", Port: 8080, Protocol: corev1.ProtocolTCP}}

// mirrored lists the slices mirrored for the Service, by address type.
func mirrored(ctx context.Context, g Gomega, ns, name string) map[discoveryv1.AddressType]discoveryv1.EndpointSlice {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: endpointslicemirroring.ManagedBy,
	})).To(Succeed())
	out := map[discoveryv1.AddressType]discoveryv1.EndpointSlice{}
	for _, s := range list.Items {
		g.Expect(out).NotTo(HaveKey(s.AddressType), "one slice per address type")
		out[s.AddressType] = s
	}
	return out
}

// readiness lists "address ready" for a slice's endpoints, sorted.
func readiness(s discoveryv1.EndpointSlice) []string {
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, fmt.Sprintf("%s %t", e.Addresses[0], *e.Conditions.Ready))
	}
	slices.Sort(out)
	return out
}

func expectNoSlices(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(mirrored(ctx, g, ns, name)).To(BeEmpty())
	}).Should(Succeed())
	Consistently(func(g Gomega) {
		g.Expect(mirrored(ctx, g, ns, name)).To(BeEmpty())
	}).Should(Succeed())
}
