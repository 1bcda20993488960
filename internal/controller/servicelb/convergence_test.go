package servicelb

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestConverged(t *testing.T) {
	lb := func(class *string, ingress ...string) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class}}
		for _, ip := range ingress {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		class string
		want  bool
	}{
		{"ClusterIP", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}, "", true},
		{"LoadBalancer waiting", lb(nil), "", false},
		{"LoadBalancer with its address", lb(nil, "10.0.0.1"), "", true},
		{"the provider's class waiting", lb(ptr.To("kcm.io/pool")), "kcm.io/pool", false},
		{"the provider's class with its address", lb(ptr.To("kcm.io/pool"), "10.0.0.1"), "kcm.io/pool", true},
		{"another class: not served", lb(ptr.To("example.com/other")), "kcm.io/pool", true},
		{"a class, the provider has none: not served", lb(ptr.To("example.com/other")), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Converged(tc.svc, tc.class)
			if got != tc.want || why == "" {
				t.Errorf("Converged = %v, %q; want %v with a reason", got, why, tc.want)
			}
		})
	}
}
