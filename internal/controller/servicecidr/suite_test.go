package servicecidr_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/servicecidr"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestServiceCIDRController(t *testing.T) {
	testenv.RunSuite(t, "service-cidr-controller suite")
}

// failPrefix names the ServiceCIDRs whose status writes fail, for the Warning Event.
const failPrefix = "fail-"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{servicecidr.ControllerName}, nil,
		setup.OverrideFor[servicecidr.Reconciler](servicecidr.ControllerName, func(r *servicecidr.Reconciler) {
			r.Client = &failingStatus{Client: r.Client}
		}))).To(Succeed())
})

// failingStatus fails the status writes of ServiceCIDRs named failPrefix*.
type failingStatus struct{ client.Client }

func (c *failingStatus) Status() client.SubResourceWriter { return statusWriter{c.Client.Status()} }

type statusWriter struct{ client.SubResourceWriter }

func (w statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if strings.HasPrefix(obj.GetName(), failPrefix) {
		return errors.New("status write refused by the test")
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

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
