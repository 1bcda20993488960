package expand_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kcm/kcm/internal/controller/expand"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("persistentvolume-expander-controller", func() {
	It("leaves a CSI volume to the driver's external resizer, with upstream's Event and no annotation", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "csi")
		pvc, _ := boundClaim(ctx, ns, "data", csiSource("data"), corev1.PersistentVolumeFilesystem)
		request(ctx, pvc, "2Gi")
		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(
			"Normal ExternalExpanding: waiting for an external controller to expand this PVC"))
		c := getClaim(ctx, ns, "data")(Default)
		Expect(c.Annotations).NotTo(HaveKey(expand.AnnResizer))
		Expect(c.Status.AllocatedResourceStatuses).To(BeEmpty())
	})

	It("hands a migrated in-tree volume to its CSI driver's resizer through the claim's annotation", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "migrated")
		src := corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}
		pvc, pvName := boundClaim(ctx, ns, "data", src, corev1.PersistentVolumeFilesystem)
		Consistently(getClaim(ctx, ns, "data")).WithTimeout(testenv.ConsistentlyDuration).
			Should(WithTransform(func(c *corev1.PersistentVolumeClaim) map[string]string { return c.Annotations }, Not(HaveKey(expand.AnnResizer))),
				"no annotation before the claim asks for more")

		request(ctx, pvc, "2Gi")
		Eventually(func(g Gomega) map[string]string { return getClaim(ctx, ns, "data")(g).Annotations }).
			Should(HaveKeyWithValue(expand.AnnResizer, "ebs.csi.aws.com"))
		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(
			"Normal ExternalExpanding: CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc"))
		// The resizer's own work is not the controller's: the volume keeps its size.
		Expect(storage(getVolume(ctx, pvName)(Default).Spec.Capacity)).To(Equal("1Gi"))
	})

	It("expands a FlexVolume for the kubelet: volume size, claim resize status, pre-resize capacity, then drops it when the node is done", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "flex")
		pvc, pvName := boundClaim(ctx, ns, "data", flexSource(), corev1.PersistentVolumeFilesystem)
		request(ctx, pvc, "2Gi")

		Eventually(func(g Gomega) {
			v := getVolume(ctx, pvName)(g)
			g.Expect(storage(v.Spec.Capacity)).To(Equal("2Gi"))
			g.Expect(v.Annotations).To(HaveKeyWithValue(expand.AnnPreResizeCapacity, "1Gi"))
			c := getClaim(ctx, ns, "data")(g)
			g.Expect(c.Annotations).To(HaveKeyWithValue(expand.AnnResizer, "example.com/flex"))
			g.Expect(storage(c.Status.AllocatedResources)).To(Equal("2Gi"))
			g.Expect(c.Status.AllocatedResourceStatuses).To(HaveKeyWithValue(corev1.ResourceStorage, corev1.PersistentVolumeClaimNodeResizePending))
			g.Expect(storage(c.Status.Capacity)).To(Equal("1Gi"), "the node has not grown the file system yet")
			g.Expect(conditionTypes(c)).To(ConsistOf(corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimFileSystemResizePending))
			for _, cond := range c.Status.Conditions {
				g.Expect(cond.Status).To(Equal(corev1.ConditionTrue))
				if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending {
					g.Expect(cond.Message).To(Equal("Waiting for user to (re-)start a pod to finish file system resize of volume on node."))
				}
			}
		}).Should(Succeed())

		By("the kubelet finishing the file system resize")
		Eventually(func(g Gomega) {
			c := getClaim(ctx, ns, "data")(g)
			c.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
			c.Status.AllocatedResourceStatuses = nil
			c.Status.Conditions = nil
			g.Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) map[string]string { return getVolume(ctx, pvName)(g).Annotations }).
			ShouldNot(HaveKey(expand.AnnPreResizeCapacity))
		Expect(storage(getVolume(ctx, pvName)(Default).Spec.Capacity)).To(Equal("2Gi"))
	})

	It("finishes a FlexVolume block volume's expansion itself: no file system to grow", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "block")
		pvc, pvName := boundClaim(ctx, ns, "data", flexSource(), corev1.PersistentVolumeBlock)
		request(ctx, pvc, "3Gi")
		Eventually(func(g Gomega) {
			c := getClaim(ctx, ns, "data")(g)
			g.Expect(storage(c.Status.Capacity)).To(Equal("3Gi"))
			g.Expect(storage(c.Status.AllocatedResources)).To(Equal("3Gi"))
			g.Expect(c.Status.AllocatedResourceStatuses).To(BeEmpty())
			g.Expect(c.Status.Conditions).To(BeEmpty())
		}).Should(Succeed())
		v := getVolume(ctx, pvName)(Default)
		Expect(storage(v.Spec.Capacity)).To(Equal("3Gi"))
		Expect(v.Annotations).NotTo(HaveKey(expand.AnnPreResizeCapacity))
		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(
			fmt.Sprintf("Normal VolumeResizeSuccessful: ExpandVolume succeeded for volume %s/data", ns)))
	})

	It("reports a failed expansion as VolumeResizeFailed and resumes to the allocated size", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "fail")
		pvc, pvName := boundClaim(ctx, ns, "data", flexSource(), corev1.PersistentVolumeFilesystem)
		lift := denyVolumeWrites(ctx, pvName)
		DeferCleanup(func(ctx SpecContext) { lift(ctx) })
		request(ctx, pvc, "2Gi")

		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(And(
			HavePrefix(fmt.Sprintf("Warning VolumeResizeFailed: error updating pv for pvc %s/data: ", ns)),
			ContainSubstring("denied by the test"))))
		c := getClaim(ctx, ns, "data")(Default)
		Expect(c.Status.AllocatedResourceStatuses).To(HaveKeyWithValue(corev1.ResourceStorage, corev1.PersistentVolumeClaimControllerResizeInProgress))
		Expect(storage(c.Status.AllocatedResources)).To(Equal("2Gi"))
		Expect(conditionTypes(c)).To(ConsistOf(corev1.PersistentVolumeClaimResizing))
		Expect(storage(getVolume(ctx, pvName)(Default).Spec.Capacity)).To(Equal("1Gi"))

		By("the user asking for more while it failed, then the volume writable again")
		request(ctx, pvc, "3Gi")
		lift(ctx)
		Eventually(func(g Gomega) {
			g.Expect(storage(getVolume(ctx, pvName)(g).Spec.Capacity)).To(Equal("2Gi"), "the size already allocated, not the new request")
			c := getClaim(ctx, ns, "data")(g)
			g.Expect(c.Status.AllocatedResourceStatuses).To(HaveKeyWithValue(corev1.ResourceStorage, corev1.PersistentVolumeClaimNodeResizePending))
		}).Should(Succeed())
	})
})
