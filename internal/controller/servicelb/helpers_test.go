package servicelb_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/servicelb"
)

// newLB is a LoadBalancer Service with one TCP port.
func newLB(ns, name string, mod ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
	for _, m := range mod {
		m(svc)
	}
	return svc
}

func get(g Gomega, svc *corev1.Service) *corev1.Service {
	cur := &corev1.Service{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(svc), cur)).To(Succeed())
	return cur
}

func hasFinalizer(svc *corev1.Service) bool { return servicehelper.HasLBFinalizer(svc) }

// events are the Events the controller recorded about the Service named name in ns, as
// "Type Reason: message".
func events(g Gomega, ns, name string) []string {
	list := &corev1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "Service" || e.InvolvedObject.Name != name {
			continue
		}
		g.Expect(e.Source.Component).To(Equal(servicelb.EventSource), "the Event's source")
		out = append(out, e.Type+" "+e.Reason+": "+e.Message)
	}
	return out
}

// deleteServices deletes the Services of the namespaces and waits until they are gone: the
// controller must still run, to lift their finalizers.
func deleteServices(ctx context.Context, namespaces ...string) {
	GinkgoHelper()
	// Services have no deletecollection.
	for _, ns := range namespaces {
		list := &corev1.ServiceList{}
		Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &list.Items[i]))).To(Succeed())
		}
	}
	Eventually(func(g Gomega) {
		for _, ns := range namespaces {
			list := &corev1.ServiceList{}
			g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), ns)
		}
	}).Should(Succeed())
}
