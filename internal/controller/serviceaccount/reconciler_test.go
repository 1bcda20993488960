package serviceaccount_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/serviceaccount"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("serviceaccount-controller", func() {
	ctx := context.Background()
	defaultSA := func(ns string) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: serviceaccount.DefaultServiceAccount}
	}
	// recreated waits until the default ServiceAccount of ns exists with a UID other than
	// old: the controller acted on that namespace.
	recreated := func(ns string, old types.UID) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			sa := &corev1.ServiceAccount{}
			g.Expect(env.Client.Get(ctx, defaultSA(ns), sa)).To(Succeed())
			g.Expect(sa.UID).NotTo(Equal(old))
		}).Should(Succeed())
	}
	deleteDefault := func(ns string) types.UID {
		GinkgoHelper()
		sa := &corev1.ServiceAccount{}
		Eventually(func() error { return env.Client.Get(ctx, defaultSA(ns), sa) }).Should(Succeed())
		Expect(env.Client.Delete(ctx, sa)).To(Succeed())
		return sa.UID
	}
	absent := func(key types.NamespacedName) func() bool {
		return func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, &corev1.ServiceAccount{})) }
	}

	It("gives the namespaces that existed before it started a default ServiceAccount", func() {
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			Eventually(func() error {
				return env.Client.Get(ctx, defaultSA(ns), &corev1.ServiceAccount{})
			}).Should(Succeed(), "namespace %s", ns)
		}
	})

	It("gives a new namespace a default ServiceAccount", func() {
		ns := env.Namespace(ctx, "sa")
		Eventually(func() error {
			return env.Client.Get(ctx, defaultSA(ns), &corev1.ServiceAccount{})
		}).Should(Succeed())
	})

	It("recreates the default ServiceAccount when it is deleted", func() {
		ns := env.Namespace(ctx, "sa")
		recreated(ns, deleteDefault(ns))
	})

	It("leaves other ServiceAccounts alone", func() {
		ns := env.Namespace(ctx, "sa")
		other := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"}}
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		Expect(env.Client.Delete(ctx, other)).To(Succeed())
		// The witness: the default one, deleted after it, is recreated, so the controller has
		// synced the namespace since "builder" went.
		recreated(ns, deleteDefault(ns))
		Consistently(absent(client.ObjectKeyFromObject(other))).Should(BeTrue())
	})

	It("retries a failed create without an Event, as upstream", func() {
		ns := env.Namespace(ctx, "sa")
		Eventually(func() error { return env.Client.Get(ctx, defaultSA(ns), &corev1.ServiceAccount{}) }).Should(Succeed())
		// The API server refuses the controller's create.
		lift := env.DenyCreates(ctx, ns, "serviceaccounts", func() error {
			return env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}})
		})
		failures := testenv.ReconcileErrors(serviceaccount.ControllerName)()
		deleteDefault(ns)

		By("the create failing: the sync returns the error and is retried")
		Eventually(testenv.ReconcileErrors(serviceaccount.ControllerName)).Should(BeNumerically(">", failures))
		Expect(absent(defaultSA(ns))()).To(BeTrue())

		By("the policy lifted: the retry creates it")
		lift()
		Eventually(func() error { return env.Client.Get(ctx, defaultSA(ns), &corev1.ServiceAccount{}) }).Should(Succeed())
		events := &eventsv1.EventList{}
		Expect(env.Client.List(ctx, events)).To(Succeed())
		for _, e := range events.Items {
			Expect(e.Regarding.Name == ns && e.Reason == "FailedCreate").To(BeFalse(), "Event %s/%s: %s", e.Namespace, e.Name, e.Note)
		}
	})

	It("creates nothing in a terminating namespace", func() {
		terminating, active := env.Namespace(ctx, "sa"), env.Namespace(ctx, "sa")
		Eventually(func() error { return env.Client.Get(ctx, defaultSA(terminating), &corev1.ServiceAccount{}) }).Should(Succeed())

		// envtest runs no namespace controller, so the finalizer keeps the namespace
		// Terminating for as long as the test needs.
		Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: terminating}})).To(Succeed())
		Eventually(func(g Gomega) {
			ns := &corev1.Namespace{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: terminating}, ns)).To(Succeed())
			g.Expect(ns.Status.Phase).To(Equal(corev1.NamespaceTerminating))
		}).Should(Succeed())
		deleteDefault(terminating)
		// The witness: the default ServiceAccount of an active namespace, deleted after the
		// terminating one's, is recreated, so the controller saw both deletions.
		recreated(active, deleteDefault(active))
		Consistently(absent(defaultSA(terminating))).Should(BeTrue())
	})
})
