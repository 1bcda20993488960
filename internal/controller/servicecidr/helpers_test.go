package servicecidr_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/servicecidr"
)

func createCIDR(ctx context.Context, name string, ranges ...string) *networkingv1.ServiceCIDR {
	GinkgoHelper()
	c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: ranges}}
	Expect(env.Client.Create(ctx, c)).To(Succeed())
	return c
}

// ready waits for the ServiceCIDR to hold the finalizer and upstream's Ready=True.
func ready(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &networkingv1.ServiceCIDR{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(servicecidr.Finalizer))
		c := apimeta.FindStatusCondition(got.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("Kubernetes Service CIDR is ready"))
	}).Should(Succeed())
}

// terminating waits for the ServiceCIDR to be blocked: deleted, finalizer held, Ready False.
func terminating(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &networkingv1.ServiceCIDR{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(got.Finalizers).To(ContainElement(servicecidr.Finalizer))
		c := apimeta.FindStatusCondition(got.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(networkingv1.ServiceCIDRReasonTerminating))
		g.Expect(c.Message).To(Equal("There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"))
	}).Should(Succeed())
}

func exists(ctx context.Context, name string) bool {
	err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &networkingv1.ServiceCIDR{})
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

func gone(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func() bool { return exists(ctx, name) }).Should(BeFalse(), "ServiceCIDR %s released and gone", name)
}

func deleteCIDR(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(env.Client.Delete(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

// createService asks for a ClusterIP Service at ip; the API server allocates it from a
// ServiceCIDR and records it as an IPAddress.
func createService(ctx context.Context, ns, ip string) *corev1.Service {
	GinkgoHelper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "svc-"},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	Eventually(func() error { return env.Client.Create(ctx, svc) }).Should(Succeed())
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Name: ip}, &networkingv1.IPAddress{})
	}).Should(Succeed())
	return svc
}

// eventsAbout lists the Events regarding a ServiceCIDR (cluster-scoped: recorded in default).
func eventsAbout(ctx context.Context, c *networkingv1.ServiceCIDR) []eventsv1.Event {
	GinkgoHelper()
	events := &eventsv1.EventList{}
	Expect(env.Client.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	var about []eventsv1.Event
	for _, e := range events.Items {
		if e.Regarding.UID == c.UID {
			about = append(about, e)
		}
	}
	return about
}
