//go:build e2e && linux

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceCIDRs (issue 18's service-cidr-controller, as its own ServiceAccount under kubeadm's
// identity): the API server's default one and a new one become Ready; a deleted one stays
// while a Service holds an address only it covers.
var _ = Describe("ServiceCIDRs", func() {
	const finalizer = "networking.k8s.io/service-cidr-finalizer"

	It("become Ready with their finalizer, and a deleted one is kept until the last Service with an address in it goes", func(ctx SpecContext) {
		ns := newNamespace(ctx)

		By("the API server's default ServiceCIDR, kubernetes")
		expectServiceCIDRReady(ctx, "kubernetes", finalizer)

		By("a second ServiceCIDR, and a Service given an address only it covers")
		extra := &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: ns},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.9.0.0/24"}},
		}
		Expect(cl.Create(ctx, extra)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, extra))).To(Succeed()) })
		expectServiceCIDRReady(ctx, extra.Name, finalizer)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pinned"},
			Spec: corev1.ServiceSpec{
				ClusterIP: "10.9.0.10",
				Ports:     []corev1.ServicePort{{Name: "http", Port: 80}},
			},
		}
		// The API server's allocator learns of the new range through its own informer, maybe
		// after the test has seen it Ready: until then the address is refused as out of range.
		Eventually(ctx, func() error { return cl.Create(ctx, svc.DeepCopy()) }).WithTimeout(30*time.Second).
			WithPolling(500*time.Millisecond).Should(Succeed(), "Service with clusterIP 10.9.0.10")

		By("deleting the second ServiceCIDR: Ready=False, Terminating, while the Service holds 10.9.0.10")
		Expect(cl.Delete(ctx, extra)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cidr := &networkingv1.ServiceCIDR{}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(extra), cidr)).To(Succeed())
			g.Expect(cidr.Finalizers).To(ContainElement(finalizer))
			ready := meta.FindStatusCondition(cidr.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(networkingv1.ServiceCIDRReasonTerminating))
			g.Expect(ready.Message).To(Equal("There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"))
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)

		By("the Service goes: the ServiceCIDR is released (after upstream's 10 s grace)")
		Expect(cl.Delete(ctx, svc)).To(Succeed())
		Eventually(ctx, func() error {
			return cl.Get(ctx, client.ObjectKeyFromObject(extra), &networkingv1.ServiceCIDR{})
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "logs in %s", logDir)
	})
})

// expectServiceCIDRReady waits until the ServiceCIDR has the finalizer and upstream's Ready=True.
func expectServiceCIDRReady(ctx SpecContext, name, finalizer string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		cidr := &networkingv1.ServiceCIDR{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: name}, cidr)).To(Succeed())
		g.Expect(cidr.Finalizers).To(ContainElement(finalizer))
		ready := meta.FindStatusCondition(cidr.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
		g.Expect(ready).NotTo(BeNil(), "Ready condition of %s", name)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(ready.Message).To(Equal("Kubernetes Service CIDR is ready"))
	}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "ServiceCIDR %s; logs in %s", name, logDir)
}
