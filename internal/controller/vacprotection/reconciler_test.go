package vacprotection_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("volumeattributesclass-protection-controller", func() {
	It("puts the finalizer back on a live class that lost it", func(ctx SpecContext) {
		vac := createClass(ctx)
		got := &storagev1.VolumeAttributesClass{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vac), got)).To(Succeed())
		GinkgoWriter.Printf("finalizers at creation (admission): %v\n", got.Finalizers)
		change(ctx, vac, env.Client.Update, func(v *storagev1.VolumeAttributesClass) { v.Finalizers = nil })
		withFinalizer(ctx, vac)
	})

	It("keeps a deleted class while a claim asks for it, and releases it when the claim goes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "spec")
		vac := createClass(ctx)
		withFinalizer(ctx, vac)
		pvc := createClaim(ctx, ns, ptr.To(vac.Name))
		Expect(env.Client.Delete(ctx, vac)).To(Succeed())
		deleteUnusedWitness(ctx)
		held(ctx, vac)

		remove(ctx, pvc)
		gone(ctx, vac)
	})

	It("counts a claim's current and target classes (status), and releases each once no longer named", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "status")
		current, target := createClass(ctx), createClass(ctx)
		withFinalizer(ctx, current)
		withFinalizer(ctx, target)
		pvc := createClaim(ctx, ns, nil)
		By("the external resizer modifying the volume from one class to the other (played by the test)")
		change(ctx, pvc, updateStatus, func(c *corev1.PersistentVolumeClaim) {
			c.Status.CurrentVolumeAttributesClassName = ptr.To(current.Name)
			c.Status.ModifyVolumeStatus = &corev1.ModifyVolumeStatus{
				TargetVolumeAttributesClassName: target.Name, Status: corev1.PersistentVolumeClaimModifyVolumeInProgress}
		})
		Expect(env.Client.Delete(ctx, current)).To(Succeed())
		Expect(env.Client.Delete(ctx, target)).To(Succeed())
		deleteUnusedWitness(ctx)
		held(ctx, current, target)

		By("the modification finishing: the claim's volume now has the target class")
		change(ctx, pvc, updateStatus, func(c *corev1.PersistentVolumeClaim) {
			c.Status.CurrentVolumeAttributesClassName = ptr.To(target.Name)
			c.Status.ModifyVolumeStatus = nil
		})
		gone(ctx, current)
		held(ctx, target)

		remove(ctx, pvc)
		gone(ctx, target)
	})

	It("keeps a class a volume names, and releases it when the volume moves to another class", func(ctx SpecContext) {
		old, next := createClass(ctx), createClass(ctx)
		withFinalizer(ctx, old)
		withFinalizer(ctx, next)
		pv := createVolume(ctx, old.Name)
		Expect(env.Client.Delete(ctx, old)).To(Succeed())
		deleteUnusedWitness(ctx)
		held(ctx, old)

		change(ctx, pv, env.Client.Update, func(v *corev1.PersistentVolume) { v.Spec.VolumeAttributesClassName = ptr.To(next.Name) })
		gone(ctx, old)

		Expect(env.Client.Delete(ctx, next)).To(Succeed())
		held(ctx, next)
		remove(ctx, pv)
		gone(ctx, next)
	})

	It("re-checks live: a claim the cache has not seen still keeps its class", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "live")
		byClaim, byVolume := createClass(ctx), createClass(ctx)
		withFinalizer(ctx, byClaim)
		withFinalizer(ctx, byVolume)
		pvc := createClaim(ctx, ns, ptr.To(byClaim.Name))
		pv := createVolume(ctx, byVolume.Name)
		blind.Store(true)
		DeferCleanup(func() { blind.Store(false) })
		Expect(env.Client.Delete(ctx, byClaim)).To(Succeed())
		Expect(env.Client.Delete(ctx, byVolume)).To(Succeed())
		deleteUnusedWitness(ctx)
		held(ctx, byClaim, byVolume)

		remove(ctx, pvc)
		remove(ctx, pv)
		gone(ctx, byClaim)
		gone(ctx, byVolume)
	})
})
