package serviceaccount_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/controller/serviceaccount"
)

var _ = Describe("serviceaccount-controller", func() {
	ctx := context.Background()
	defaultSA := func(ns string) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: serviceaccount.DefaultServiceAccount}
	}
	newNamespace := func() *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sa-"}}
		Expect(env.Client.Create(ctx, ns)).To(Succeed())
		return ns
	}

	It("gives the namespaces that existed before it started a default ServiceAccount", func() {
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			Eventually(func() error {
				return env.Client.Get(ctx, defaultSA(ns), &corev1.ServiceAccount{})
			}).Should(Succeed(), "namespace %s", ns)
		}
	})

	It("gives a new namespace a default ServiceAccount", func() {
		ns := newNamespace()
		Eventually(func() error {
			return env.Client.Get(ctx, defaultSA(ns.Name), &corev1.ServiceAccount{})
		}).Should(Succeed())
	})

	It("recreates the default ServiceAccount when it is deleted", func() {
		ns := newNamespace()
		sa := &corev1.ServiceAccount{}
		Eventually(func() error { return env.Client.Get(ctx, defaultSA(ns.Name), sa) }).Should(Succeed())
		oldUID := sa.UID

		Expect(env.Client.Delete(ctx, sa)).To(Succeed())
		Eventually(func(g Gomega) {
			recreated := &corev1.ServiceAccount{}
			g.Expect(env.Client.Get(ctx, defaultSA(ns.Name), recreated)).To(Succeed())
			g.Expect(recreated.UID).NotTo(Equal(oldUID))
		}).Should(Succeed())
	})

	It("leaves other ServiceAccounts alone", func() {
		ns := newNamespace()
		other := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "builder"}}
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		Expect(env.Client.Delete(ctx, other)).To(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "builder"}, &corev1.ServiceAccount{}))
		}, 2*time.Second).Should(BeTrue())
	})

	It("creates nothing in a terminating namespace", func() {
		ns := newNamespace()
		sa := &corev1.ServiceAccount{}
		Eventually(func() error { return env.Client.Get(ctx, defaultSA(ns.Name), sa) }).Should(Succeed())

		// envtest runs no namespace controller, so the finalizer keeps the namespace
		// Terminating for as long as the test needs.
		Expect(env.Client.Delete(ctx, ns)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: ns.Name}, ns)).To(Succeed())
			g.Expect(ns.Status.Phase).To(Equal(corev1.NamespaceTerminating))
		}).Should(Succeed())
		Expect(env.Client.Delete(ctx, sa)).To(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, defaultSA(ns.Name), &corev1.ServiceAccount{}))
		}, 2*time.Second).Should(BeTrue())
	})
})
