package pvcprotection_test

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/pvcprotection"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("persistentvolumeclaim-protection-controller", func() {
	It("puts the finalizer back on a live claim that lost it", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		By("removing the finalizer the admission plugin may have added")
		Eventually(func() error {
			got, err := getClaim(ctx, pvc)()
			if err != nil {
				return err
			}
			got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == pvcprotection.Finalizer })
			return env.Client.Update(ctx, got)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, pvc)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ContainElement(pvcprotection.Finalizer))
		}).Should(Succeed())
	})

	It("keeps a deleted claim while a scheduled pod object names it, even Succeeded, and releases it when the pod is deleted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		p := createPod(ctx, ns, "web", claimVolume("data"), true)
		env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodRunning, ""))
		Expect(env.Client.Delete(ctx, pvc)).To(Succeed())
		expectKept(ctx, pvc)

		By("the pod succeeding: upstream keeps the claim while the pod object exists")
		env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodSucceeded, ""))
		expectKept(ctx, pvc)

		By("deleting the pod")
		forceDelete(ctx, p)
		expectGone(ctx, pvc)
	})

	It("deletes an unused claim promptly, and one that only an unscheduled pod names", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		unused := createClaim(ctx, ns, "unused", nil)
		pending := createClaim(ctx, ns, "pending", nil)
		createPod(ctx, ns, "waiting", claimVolume("pending"), false)
		Expect(env.Client.Delete(ctx, unused)).To(Succeed())
		Expect(env.Client.Delete(ctx, pending)).To(Succeed())
		expectGone(ctx, unused)
		expectGone(ctx, pending)
	})

	It("keeps the claim of a pod's generic ephemeral volume, but not a same-named claim the pod does not own", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		owner := createPod(ctx, ns, "owner", ephemeralVolume(), true)
		owned := createClaim(ctx, ns, "owner-data", owner)
		other := createPod(ctx, ns, "other", ephemeralVolume(), true)
		foreign := createClaim(ctx, ns, "other-data", nil)
		Expect(env.Client.Delete(ctx, owned)).To(Succeed())
		Expect(env.Client.Delete(ctx, foreign)).To(Succeed())
		expectGone(ctx, foreign)
		expectKept(ctx, owned)
		Expect(other).NotTo(BeNil())

		By("deleting the owner pod")
		forceDelete(ctx, owner)
		expectGone(ctx, owned)
	})

	It("sets the Unused condition of a bound claim as pods come and finish", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		By("the binder binding the claim (played by the test)")
		Eventually(func() error {
			got, err := getClaim(ctx, pvc)()
			if err != nil {
				return err
			}
			got.Status.Phase = corev1.ClaimBound
			return env.Client.Status().Update(ctx, got)
		}).Should(Succeed())
		expectUnused(ctx, pvc, corev1.ConditionTrue, "NoPodsUsingPVC", "No pods are currently referencing this PVC")

		By("a pod naming it, not scheduled yet")
		p := createPod(ctx, ns, "web", claimVolume("data"), false)
		expectUnused(ctx, pvc, corev1.ConditionFalse, "PodUsingPVC", "A pod is currently referencing this PVC")

		By("the pod failing")
		env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodFailed, ""))
		expectUnused(ctx, pvc, corev1.ConditionTrue, "NoPodsUsingPVC", "No pods are currently referencing this PVC")
	})
})
