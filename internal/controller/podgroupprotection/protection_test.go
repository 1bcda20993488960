package podgroupprotection_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/podgroupprotection"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("podgroup-protection-controller", func() {
	It("lets a PodGroup no pod names go at once", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pg-unused")
		pg := createGroup(ctx, ns, "lonely")
		createPod(ctx, ns, "elsewhere", "other-group")
		Expect(env.Client.Delete(ctx, pg)).To(Succeed())
		Eventually(gone(ctx, pg)).Should(BeTrue())
	})

	It("keeps a deleted PodGroup while an active pod names it, and releases it when the last one terminates or goes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pg-used")
		pg := createGroup(ctx, ns, "gang")
		runner := createPod(ctx, ns, "runner", pg.Name)
		env.SetPodStatus(ctx, runner, testenv.Phase(corev1.PodRunning, ""))
		waiter := createPod(ctx, ns, "waiter", pg.Name)
		done := createPod(ctx, ns, "done", pg.Name)
		env.SetPodStatus(ctx, done, testenv.Phase(corev1.PodSucceeded, ""))

		// A second PodGroup, unused, deleted after the first: its release witnesses that the
		// controller has seen the deletion, so the first one's finalizer is kept on purpose.
		witness := createGroup(ctx, ns, "witness")
		Expect(env.Client.Delete(ctx, pg)).To(Succeed())
		Expect(env.Client.Delete(ctx, witness)).To(Succeed())
		Eventually(gone(ctx, witness)).Should(BeTrue())
		Consistently(finalizers(ctx, pg), "2s").Should(ContainElement(podgroupprotection.Finalizer))

		By("one active pod fails: the other still holds the group")
		env.SetPodStatus(ctx, runner, testenv.Phase(corev1.PodFailed, ""))
		Consistently(finalizers(ctx, pg), "2s").Should(ContainElement(podgroupprotection.Finalizer))

		By("the last active pod is deleted: the group goes")
		forceDelete(ctx, waiter)
		Eventually(gone(ctx, pg)).Should(BeTrue())
	})

	It("releases a deleted PodGroup when its last active pod succeeds", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pg-finish")
		pg := createGroup(ctx, ns, "batch")
		worker := createPod(ctx, ns, "worker", pg.Name)
		env.SetPodStatus(ctx, worker, testenv.Phase(corev1.PodRunning, ""))
		Expect(env.Client.Delete(ctx, pg)).To(Succeed())
		Expect(finalizers(ctx, pg)(Default)).To(ContainElement(podgroupprotection.Finalizer))

		env.SetPodStatus(ctx, worker, testenv.Phase(corev1.PodSucceeded, ""))
		Eventually(gone(ctx, pg)).Should(BeTrue())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(worker), &corev1.Pod{})).To(Succeed(), "the pod itself stays")
	})
})
