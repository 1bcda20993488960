package attachdetach_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/attachdetach"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("attach", func() {
	It("creates upstream's VolumeAttachment for the pod's node, and reports the volume once attached", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "attach")
		node := ns + "-n"
		registerNode(ctx, node, true)
		pv := createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))

		name := vaName(ns+"-h", driver, node)
		Eventually(func(g Gomega) {
			va := getVA(ctx, g, name)
			g.Expect(va.Spec.Attacher).To(Equal(driver))
			g.Expect(va.Spec.NodeName).To(Equal(node))
			g.Expect(va.Spec.Source.PersistentVolumeName).To(Equal(&pv))
			g.Expect(va.Spec.Source.InlineVolumeSpec).To(BeNil())
		}).Should(Succeed())
		// Not attached yet: not reported.
		Expect(nodeAttached(ctx, node)(Default)).To(BeEmpty())

		attachVA(ctx, name, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(unique(driver, ns+"-h")))
		Eventually(events(ctx, p)).Should(ContainElement(
			fmt.Sprintf("Normal SuccessfulAttachVolume: AttachVolume.Attach succeeded for volume %q ", pv)))

		// Upstream's gauges: the node's CSI volume in use, and the driver's volumes desired
		// and attached.
		plugin := "kubernetes.io/csi:" + driver
		Expect(testenv.Sample("storage_count_attachable_volumes_in_use", map[string]string{"node": node, "volume_plugin": plugin})).To(Equal(1.0))
		Expect(testenv.Sample("attachdetach_controller_total_volumes", map[string]string{"plugin_name": plugin, "state": "desired_state_of_world"})).To(BeNumerically(">=", 1))
		Expect(testenv.Sample("attachdetach_controller_total_volumes", map[string]string{"plugin_name": plugin, "state": "actual_state_of_world"})).To(BeNumerically(">=", 1))
	})

	It("attaches nothing for a driver whose CSIDriver says attachRequired: false, nor on a node it does not manage", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "noattach")
		managed, unmanaged := ns+"-m", ns+"-u"
		registerNode(ctx, managed, true)
		registerNode(ctx, unmanaged, false)
		createVolume(ctx, ns, "skip", csiSource(noAttachDrver, ns+"-skip"), corev1.ReadWriteOnce)
		createVolume(ctx, ns, "other", csiSource(driver, ns+"-other"), corev1.ReadWriteMany)
		createVolume(ctx, ns, "witness", csiSource(driver, ns+"-w"), corev1.ReadWriteOnce)
		createPod(ctx, ns, "skip", managed, claimVolume("skip"))
		createPod(ctx, ns, "unmanaged", unmanaged, claimVolume("other"))
		createPod(ctx, ns, "witness", managed, claimVolume("witness"))

		// The witness, created last, is attached: the others were judged before it.
		Eventually(vaExists(ctx, vaName(ns+"-w", driver, managed))).Should(BeTrue())
		Consistently(vaExists(ctx, vaName(ns+"-skip", noAttachDrver, managed))).WithTimeout(2 * time.Second).Should(BeFalse())
		Expect(vaExists(ctx, vaName(ns+"-other", driver, unmanaged))()).To(BeFalse())
	})

	It("attaches in-tree volumes migrated to CSI: a volume by its name, an inline source by its translated spec", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "migrated")
		node := ns + "-n"
		registerNode(ctx, node, true)
		pv := createVolume(ctx, ns, "ebs", corev1.PersistentVolumeSource{
			AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-" + ns}}, corev1.ReadWriteOnce)
		createPod(ctx, ns, "pv", node, claimVolume("ebs"))
		createPod(ctx, ns, "inline", node, corev1.VolumeSource{
			GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "disk-" + ns}})

		Eventually(func(g Gomega) {
			va := getVA(ctx, g, vaName("vol-"+ns, "ebs.csi.aws.com", node))
			g.Expect(va.Spec.Attacher).To(Equal("ebs.csi.aws.com"))
			g.Expect(va.Spec.Source.PersistentVolumeName).To(Equal(&pv))
		}).Should(Succeed())
		gceHandle := "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-" + ns
		Eventually(func(g Gomega) {
			va := getVA(ctx, g, vaName(gceHandle, "pd.csi.storage.gke.io", node))
			g.Expect(va.Spec.Attacher).To(Equal("pd.csi.storage.gke.io"))
			g.Expect(va.Spec.Source.PersistentVolumeName).To(BeNil())
			g.Expect(va.Spec.Source.InlineVolumeSpec).NotTo(BeNil())
			g.Expect(va.Spec.Source.InlineVolumeSpec.CSI.VolumeHandle).To(Equal(gceHandle))
		}).Should(Succeed())
	})

	It("reports an iSCSI volume attached at once, without a VolumeAttachment, and unreports it once unneeded and unmounted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "iscsi")
		node := ns + "-n"
		registerNode(ctx, node, true)
		p := createPod(ctx, ns, "p", node, corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{
			TargetPortal: "10.0.0.1:3260", IQN: "iqn.2026-01.com.example:" + ns, Lun: 0}})
		vol := corev1.UniqueVolumeName("kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-01.com.example:" + ns + ":0")
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		Eventually(events(ctx, p)).Should(ContainElement(`Normal SuccessfulAttachVolume: AttachVolume.Attach succeeded for volume "data" `))
		vas := &storagev1.VolumeAttachmentList{}
		Expect(env.Client.List(ctx, vas)).To(Succeed())
		for _, va := range vas.Items {
			Expect(va.Spec.NodeName).NotTo(Equal(node))
		}

		setInUse(ctx, node, vol)
		forceDelete(ctx, p)
		Consistently(nodeAttached(ctx, node)).WithTimeout(time.Second).Should(ConsistOf(vol))
		setInUse(ctx, node)
		Eventually(nodeAttached(ctx, node)).Should(BeEmpty())
	})

	It("reports a multi-attach for a ReadWriteOnce volume attached elsewhere, and attaches it once detached there", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "multi")
		n1, n2 := ns+"-1", ns+"-2"
		registerNode(ctx, n1, true)
		registerNode(ctx, n2, true)
		pv := createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		first := createPod(ctx, ns, "first", n1, claimVolume("c"))
		attachVA(ctx, vaName(ns+"-h", driver, n1), false)
		Eventually(nodeAttached(ctx, n1)).Should(ConsistOf(unique(driver, ns+"-h")))

		second := createPod(ctx, ns, "second", n2, claimVolume("c"))
		Eventually(events(ctx, second)).Should(ContainElement(fmt.Sprintf(
			"Warning FailedAttachVolume: Waiting for detach for volume %q Volume is already used by pod(s) first", pv)))
		Expect(vaExists(ctx, vaName(ns+"-h", driver, n2))()).To(BeFalse())

		forceDelete(ctx, first)
		Eventually(vaExists(ctx, vaName(ns+"-h", driver, n1))).Should(BeFalse())
		Eventually(vaExists(ctx, vaName(ns+"-h", driver, n2))).Should(BeTrue())
	})
})

var _ = Describe("node status", func() {
	It("reports an attached volume again when the node's status is rewritten without it, announcing it once", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rewrite")
		node := ns + "-n"
		registerNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		attachVA(ctx, vaName(ns+"-h", driver, node), false)
		vol := unique(driver, ns+"-h")
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		Eventually(eventCount(ctx, p, attachdetach.ReasonSuccessfulAttachVolume)).Should(Equal(1))

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			n.Status.VolumesAttached = nil
			return env.Client.Status().Update(ctx, n)
		})).To(Succeed())
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		Consistently(eventCount(ctx, p, attachdetach.ReasonSuccessfulAttachVolume)).WithTimeout(2 * time.Second).Should(Equal(1))
	})
})

var _ = Describe("attach failures", func() {
	It("reports the external attacher's error on the pod", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "failed")
		node := ns + "-n"
		registerNode(ctx, node, true)
		pv := createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name := vaName(ns+"-h", driver, node)
		Eventually(func(g Gomega) {
			va := getVA(ctx, g, name)
			va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: "rpc error: code = Internal desc = no disk"}
			g.Expect(env.Client.Status().Update(ctx, va)).To(Succeed())
		}).Should(Succeed())
		Eventually(events(ctx, p)).Should(ContainElement(fmt.Sprintf(
			"Warning FailedAttachVolume: AttachVolume.Attach failed for volume %q : rpc error: code = Internal desc = no disk", pv)))
		Expect(nodeAttached(ctx, node)(Default)).To(BeEmpty())
	})
})
