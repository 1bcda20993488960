package servicecidr_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/servicecidr"
)

var _ = Describe("service-cidr-controller", func() {
	It("takes over the default ServiceCIDR the API server made: finalizer and Ready", func(ctx SpecContext) {
		ready(ctx, "kubernetes")
	})

	It("gives a new ServiceCIDR the finalizer and Ready=True", func(ctx SpecContext) {
		created := createCIDR(ctx, "ready", "10.100.0.0/24", "fd00:100::/112")
		ready(ctx, "ready")
		By("no Warning Event: the condition was written without error")
		Consistently(func(g Gomega) {
			g.Expect(eventsAbout(ctx, created)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("keeps a deleted ServiceCIDR Terminating while a Service's address is only in it, and releases it when the Service goes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "blocked")
		createCIDR(ctx, "blocked", "10.101.0.0/24")
		ready(ctx, "blocked")
		svc := createService(ctx, ns, "10.101.0.10")
		deleteCIDR(ctx, "blocked")
		terminating(ctx, "blocked")
		Consistently(func() bool { return exists(ctx, "blocked") }).Should(BeTrue())

		Expect(env.Client.Delete(ctx, svc)).To(Succeed())
		gone(ctx, "blocked")
	})

	It("releases a blocked ServiceCIDR once a new ServiceCIDR covers its addresses, which stay allocated", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "covered")
		createCIDR(ctx, "child", "10.102.0.0/24")
		ready(ctx, "child")
		svc := createService(ctx, ns, "10.102.0.10")
		deleteCIDR(ctx, "child")
		terminating(ctx, "child")

		createCIDR(ctx, "parent", "10.102.0.0/16")
		ready(ctx, "parent")
		gone(ctx, "child")
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).To(Equal("10.102.0.10"))
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "10.102.0.10"}, &networkingv1.IPAddress{})).To(Succeed())
	})

	It("waits the grace period before releasing a deleted ServiceCIDR nothing depends on", func(ctx SpecContext) {
		createCIDR(ctx, "empty", "10.103.0.0/24")
		ready(ctx, "empty")
		deleteCIDR(ctx, "empty")
		deleted := time.Now()
		// The deletion timestamp has a resolution of one second: the finalizer stays at
		// least 9 of upstream's 10 seconds after the delete.
		Consistently(func() bool { return exists(ctx, "empty") }).WithTimeout(5 * time.Second).Should(BeTrue())
		gone(ctx, "empty")
		GinkgoWriter.Printf("released %v after the delete\n", time.Since(deleted))
	})

	It("reports a Ready condition it cannot write with upstream's Warning Event", func(ctx SpecContext) {
		name := failPrefix + "status"
		created := createCIDR(ctx, name, "10.104.0.0/24")
		Eventually(func(g Gomega) {
			g.Expect(eventsAbout(ctx, created)).To(ContainElement(And(
				HaveField("Type", corev1.EventTypeWarning),
				HaveField("Reason", "KubernetesServiceCIDRError"),
				HaveField("Note", "The ServiceCIDR Status can not be set to Ready=True"),
				HaveField("ReportingController", servicecidr.ControllerName),
			)))
		}).Should(Succeed())
		got := &networkingv1.ServiceCIDR{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(created), got)).To(Succeed())
		Expect(got.Finalizers).To(ContainElement(servicecidr.Finalizer), "the finalizer is added before the status is written")
		Expect(got.Status.Conditions).To(BeEmpty())
	})
})
