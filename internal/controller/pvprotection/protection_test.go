package pvprotection_test

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kcm/kcm/internal/controller/pvprotection"
)

var _ = Describe("persistentvolume-protection-controller", func() {
	It("puts the finalizer back on a live volume that lost it", func(ctx SpecContext) {
		pv := createVolume(ctx)
		update(ctx, pv, writeSpec, func(got *corev1.PersistentVolume) {
			got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == pvprotection.Finalizer })
		})
		Eventually(func(g Gomega) {
			got, err := getVolume(ctx, pv)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ContainElement(pvprotection.Finalizer))
		}).Should(Succeed())
	})

	It("keeps a deleted volume while it is Bound and lets it go once Released", func(ctx SpecContext) {
		pv := createVolume(ctx)
		// The controller adds the finalizer if admission did not.
		Eventually(func(g Gomega) {
			got, err := getVolume(ctx, pv)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ContainElement(pvprotection.Finalizer))
		}).Should(Succeed())
		update(ctx, pv, writeStatus, setPhase(corev1.VolumeBound))
		Expect(env.Client.Delete(ctx, pv)).To(Succeed())
		Consistently(func(g Gomega) {
			got, err := getVolume(ctx, pv)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil())
			g.Expect(got.Finalizers).To(ContainElement(pvprotection.Finalizer))
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("the binder releasing the volume (played by the test)")
		update(ctx, pv, writeStatus, setPhase(corev1.VolumeReleased))
		Eventually(func() bool {
			_, err := getVolume(ctx, pv)()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("lets an Available volume go at once", func(ctx SpecContext) {
		pv := createVolume(ctx)
		update(ctx, pv, writeStatus, setPhase(corev1.VolumeAvailable))
		update(ctx, pv, writeSpec, func(got *corev1.PersistentVolume) {
			if !slices.Contains(got.Finalizers, pvprotection.Finalizer) {
				got.Finalizers = append(got.Finalizers, pvprotection.Finalizer)
			}
		})
		Expect(env.Client.Delete(ctx, pv)).To(Succeed())
		Eventually(func() bool {
			_, err := getVolume(ctx, pv)()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})
})
