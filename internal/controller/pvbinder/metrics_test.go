package pvbinder_test

import (
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("persistentvolume-binder-controller's metrics", func() {
	It("times a provision until the claim is bound and a deletion until the volume is gone, and counts volumes and claims", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvm")
		// A provisioner of this spec alone: its series start at zero.
		provisioner := ns + ".csi.example.com"
		createClass(ctx, ns, provisioner, storagev1.VolumeBindingImmediate, nil)
		claim := createClaim(ctx, ns, "dynamic", ptr.To(ns), "1Gi")
		Eventually(func(g Gomega) map[string]string { return getClaim(ctx, ns, "dynamic")(g).Annotations }).
			Should(HaveKeyWithValue(pvbinder.AnnStorageProvisioner, provisioner))
		Expect(testenv.Sample("volume_operation_total_seconds", map[string]string{"plugin_name": provisioner, "operation_name": "provision"})).
			To(BeZero(), "not bound yet")
		Eventually(func() float64 {
			return testenv.Sample("pv_collector_unbound_pvc_count", map[string]string{"namespace": ns, "storage_class": ns, "volume_attributes_class": ""})
		}).Should(Equal(1.0))

		By("the provisioner creating the volume: bound, the provision ends")
		name := "pvc-" + string(claim.UID)
		createVolume(ctx, name, ns, "1Gi", func(v *corev1.PersistentVolume) {
			v.Annotations = map[string]string{pvbinder.AnnDynamicallyProvisioned: provisioner}
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
			v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "dynamic", UID: claim.UID}
		})
		expectBound(ctx, ns, "dynamic", name, true, false)
		Eventually(func() float64 {
			return testenv.Sample("volume_operation_total_seconds", map[string]string{"plugin_name": provisioner, "operation_name": "provision"})
		}).Should(Equal(1.0))
		Eventually(func() float64 {
			return testenv.Sample("pv_collector_bound_pvc_count", map[string]string{"namespace": ns, "storage_class": ns, "volume_attributes_class": ""})
		}).Should(Equal(1.0))
		Eventually(func() float64 {
			return testenv.Sample("pv_collector_bound_pv_count", map[string]string{"storage_class": ns})
		}).Should(Equal(1.0))
		// A CSI volume has none of the binder's plugins (hostPath, NFS), as upstream.
		Expect(testenv.Sample("pv_collector_total_pv_count", map[string]string{"plugin_name": "N/A", "volume_mode": "Filesystem"})).
			To(BeNumerically(">=", 1))
		Expect(testenv.LabelNames("pv_collector_total_pv_count")).To(Equal([]string{"plugin_name", "volume_mode"}))

		By("the claim deleted: the volume is released, and timed until the provisioner deletes it")
		removeFinalizers(ctx, &corev1.PersistentVolumeClaim{}, client.ObjectKeyFromObject(claim))
		Eventually(volumePhase(ctx, name)).Should(Equal(corev1.VolumeReleased))
		Expect(testenv.Sample("volume_operation_total_seconds", map[string]string{"plugin_name": provisioner, "operation_name": "delete"})).
			To(BeZero(), "the volume is still there")
		deleteVolume(ctx, name)
		Eventually(func() float64 {
			return testenv.Sample("volume_operation_total_seconds", map[string]string{"plugin_name": provisioner, "operation_name": "delete"})
		}).Should(Equal(1.0))
	})

	It("counts a failed provision as upstream's hostPath plugin fails it, in both error families", func(ctx SpecContext) {
		hostPath := map[string]string{"plugin_name": "kubernetes.io/host-path", "operation_name": "provision"}
		before, deprecatedBefore := testenv.Sample("volume_operation_errors_total", hostPath), testenv.Sample("volume_operation_total_errors", hostPath)
		ns := env.Namespace(ctx, "pvm")
		createClass(ctx, ns, "kubernetes.io/host-path", storagev1.VolumeBindingImmediate, nil)
		createClaim(ctx, ns, "hostpath", ptr.To(ns), "1Gi")
		Eventually(func() float64 { return testenv.Sample("volume_operation_errors_total", hostPath) }).Should(BeNumerically(">", before))
		Eventually(func() float64 { return testenv.Sample("volume_operation_total_errors", hostPath) }).Should(BeNumerically(">", deprecatedBefore))
		Expect(testenv.LabelNames("volume_operation_errors_total")).To(Equal([]string{"operation_name", "plugin_name"}))
	})

	It("times hostPath's deletions, refused or done, as volume_delete operations", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvm")
		op := func(status string) map[string]string {
			return map[string]string{"volume_plugin": "kubernetes.io/host-path", "operation_name": "volume_delete",
				"status": status, "migrated": "false"}
		}
		failed, succeeded := testenv.Sample("storage_operation_duration_seconds", op("fail-unknown")), testenv.Sample("storage_operation_duration_seconds", op("success"))
		dir, err := os.MkdirTemp("", "pvm-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		for name, path := range map[string]string{"refused": "/not-tmp/" + ns, "done": dir} {
			createVolume(ctx, ns+"-"+name, ns, "1Gi", withPolicy(corev1.PersistentVolumeReclaimDelete), withLabel("for", name),
				func(v *corev1.PersistentVolume) {
					v.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}
				})
			createClaim(ctx, ns, name, ptr.To(ns), "1Gi", selecting("for", name))
			expectBound(ctx, ns, name, ns+"-"+name, true, true)
			removeFinalizers(ctx, &corev1.PersistentVolumeClaim{}, client.ObjectKey{Namespace: ns, Name: name})
		}
		Eventually(volumePhase(ctx, ns+"-refused")).Should(Equal(corev1.VolumeFailed))
		Eventually(func() float64 { return testenv.Sample("storage_operation_duration_seconds", op("fail-unknown")) }).Should(BeNumerically(">", failed))
		// The volume itself waits for pv-protection, which no controller lifts here.
		Eventually(func() string { return dir }).ShouldNot(BeADirectory())
		// Observed once the deletion returns, which is after the directory is gone.
		Eventually(func() float64 { return testenv.Sample("storage_operation_duration_seconds", op("success")) }).Should(BeNumerically(">", succeeded))
	})

	It("counts retroactive StorageClass assignments", func(ctx SpecContext) {
		before := testenv.Sample("retroactive_storageclass_total", nil)
		ns := env.Namespace(ctx, "pvm")
		// No volume has this label: nothing fits, whatever other specs created.
		createClaim(ctx, ns, "classless", nil, "1Gi", selecting("none", ns))
		createClass(ctx, ns, "csi.example.com", storagev1.VolumeBindingImmediate, map[string]string{pvbinder.AnnIsDefaultClass: "true"})
		Eventually(func(g Gomega) *string { return getClaim(ctx, ns, "classless")(g).Spec.StorageClassName }).
			Should(Equal(ptr.To(ns)))
		Eventually(func() float64 { return testenv.Sample("retroactive_storageclass_total", nil) }).Should(BeNumerically(">", before))
	})
})
