package attachdetach_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/attachdetach"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// The suite plays the external attacher (VolumeAttachment status.attached), the kubelet
// (node status volumesInUse, the managed-attach annotation) and the scheduler (pods created
// with spec.nodeName); kcm runs the attach-detach controller alone, as kubeadm runs it.

const (
	driver        = "attach.example.com"
	noAttachDrver = "noattach.example.com"
)

var (
	env *testenv.Env
	// clk is the controller's clock: a spec moves it past the maximum wait for unmount.
	clk = &testenv.OffsetClock{}
)

// startManager runs the controller alone, on clk.
func startManager() error {
	return env.StartManagerWith([]string{attachdetach.ControllerName}, nil,
		setup.OverrideFor(attachdetach.ControllerName, func(r *attachdetach.Reconciler) { r.Clock = clk }))
}

func TestAttachDetachController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-attach-detach-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	ctx := context.Background()
	Expect(env.Client.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}})).To(Succeed())
	Expect(env.Client.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: noAttachDrver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}})).To(Succeed())
	Expect(startManager()).To(Succeed())
})

// createNode makes a Ready node, managed by the controller when managed (the kubelet's
// annotation), with its CSINode.
func createNode(ctx context.Context, name string, managed bool) {
	GinkgoHelper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if managed {
		n.Annotations = map[string]string{attachdetach.ManagedAnnotation: "true"}
	}
	Expect(env.Client.Create(ctx, n)).To(Succeed())
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	Expect(env.Client.Status().Update(ctx, n)).To(Succeed())
	Expect(env.Client.Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: name}}}})).To(Succeed())
}

// createVolume makes a claim in ns bound to a new volume of that source (as the binder
// would), returning the volume's name.
func createVolume(ctx context.Context, ns, claim string, src corev1.PersistentVolumeSource, mode corev1.PersistentVolumeAccessMode) string {
	GinkgoHelper()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pvName := ns + "-" + claim
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources: corev1.VolumeResourceRequirements{Requests: size}, VolumeName: pvName, StorageClassName: ptr.To("")}}
	Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src, Capacity: size,
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			ClaimRef:    &corev1.ObjectReference{Namespace: ns, Name: claim, UID: pvc.UID}}}
	Expect(env.Client.Create(ctx, pv)).To(Succeed())
	pv.Status.Phase = corev1.VolumeBound
	Expect(env.Client.Status().Update(ctx, pv)).To(Succeed())
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes, pvc.Status.Capacity = pvc.Spec.AccessModes, size
	Expect(env.Client.Status().Update(ctx, pvc)).To(Succeed())
	return pvName
}

func csiSource(d, handle string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: d, VolumeHandle: handle}}
}

func claimVolume(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

// createPod makes a pod scheduled to node with one volume.
func createPod(ctx context.Context, ns, name, node string, src corev1.VolumeSource) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: src}}}}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

func forceDelete(ctx context.Context, p *corev1.Pod) {
	GinkgoHelper()
	Expect(env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
}

// vaName is upstream's VolumeAttachment name, written out independently of the package.
func vaName(handle, d, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+d+node)))
}

func unique(d, handle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName("kubernetes.io/csi/" + d + "^" + handle)
}

func getVA(ctx context.Context, g Gomega, name string) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, va)).To(Succeed())
	return va
}

func vaExists(ctx context.Context, name string) func() bool {
	return func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &storagev1.VolumeAttachment{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		return err == nil
	}
}

// attachVA plays the external attacher: the VolumeAttachment (once created) is attached, and
// carries the attacher's finalizer when finalizer is set.
func attachVA(ctx context.Context, name string, finalizer bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		va := getVA(ctx, g, name)
		if finalizer && len(va.Finalizers) == 0 {
			va.Finalizers = []string{"external-attacher/" + driver}
			g.Expect(env.Client.Update(ctx, va)).To(Succeed())
		}
		va.Status.Attached = true
		g.Expect(env.Client.Status().Update(ctx, va)).To(Succeed())
	}).Should(Succeed())
}

func nodeAttached(ctx context.Context, node string) func(g Gomega) []corev1.UniqueVolumeName {
	return func(g Gomega) []corev1.UniqueVolumeName {
		n := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		var names []corev1.UniqueVolumeName
		for _, av := range n.Status.VolumesAttached {
			names = append(names, av.Name)
		}
		return names
	}
}

// setInUse plays the kubelet reporting the node's mounted volumes.
func setInUse(ctx context.Context, node string, names ...corev1.UniqueVolumeName) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		n.Status.VolumesInUse = names
		return env.Client.Status().Update(ctx, n)
	})).To(Succeed())
}

// forcedDetaches reads upstream's forced detach counter from the registry kcm's /metrics
// serves.
func forcedDetaches(reason string) float64 {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "attach_detach_controller_attachdetach_controller_forced_detaches" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// eventCount counts the pod's Events of the reason, repetitions included.
func eventCount(ctx context.Context, p *corev1.Pod, reason string) func(g Gomega) int {
	return func(g Gomega) int {
		list := &corev1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(p.Namespace))).To(Succeed())
		n := 0
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name && e.Reason == reason {
				n += max(int(e.Count), 1)
				if e.Series != nil {
					n = max(n, int(e.Series.Count))
				}
			}
		}
		return n
	}
}

// gauge reads the value of a gauge with exactly those labels from the registry kcm's
// /metrics serves (-1: no such series).
func gauge(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// events are the pod's Events as "<type> <reason>: <message>".
func events(ctx context.Context, p *corev1.Pod) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(p.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name {
				out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
			}
		}
		return out
	}
}

var _ = Describe("attach", func() {
	It("creates upstream's VolumeAttachment for the pod's node, and reports the volume once attached", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "attach")
		node := ns + "-n"
		createNode(ctx, node, true)
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
		Expect(gauge("storage_count_attachable_volumes_in_use", map[string]string{"node": node, "volume_plugin": plugin})).To(Equal(1.0))
		Expect(gauge("attachdetach_controller_total_volumes", map[string]string{"plugin_name": plugin, "state": "desired_state_of_world"})).To(BeNumerically(">=", 1))
		Expect(gauge("attachdetach_controller_total_volumes", map[string]string{"plugin_name": plugin, "state": "actual_state_of_world"})).To(BeNumerically(">=", 1))
	})

	It("attaches nothing for a driver whose CSIDriver says attachRequired: false, nor on a node it does not manage", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "noattach")
		managed, unmanaged := ns+"-m", ns+"-u"
		createNode(ctx, managed, true)
		createNode(ctx, unmanaged, false)
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
		createNode(ctx, node, true)
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
		createNode(ctx, node, true)
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
		createNode(ctx, n1, true)
		createNode(ctx, n2, true)
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
		createNode(ctx, node, true)
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
		createNode(ctx, node, true)
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

var _ = Describe("detach", func() {
	It("waits until the node no longer reports the volume in use, unreports it, then deletes the VolumeAttachment", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "detach")
		node := ns + "-n"
		createNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name, vol := vaName(ns+"-h", driver, node), unique(driver, ns+"-h")
		attachVA(ctx, name, true)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		setInUse(ctx, node, vol)

		forceDelete(ctx, p)
		Consistently(func(g Gomega) {
			g.Expect(getVA(ctx, g, name).DeletionTimestamp).To(BeNil())
			g.Expect(nodeAttached(ctx, node)(g)).To(ConsistOf(vol))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		setInUse(ctx, node)
		Eventually(func(g Gomega) {
			g.Expect(getVA(ctx, g, name).DeletionTimestamp).NotTo(BeNil())
			g.Expect(nodeAttached(ctx, node)(g)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("detaches a mounted volume at once from an out-of-service node, counted as a forced detach", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "oos")
		node := ns + "-n"
		createNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name, vol := vaName(ns+"-h", driver, node), unique(driver, ns+"-h")
		attachVA(ctx, name, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		setInUse(ctx, node, vol)
		before := forcedDetaches("out-of-service")

		forceDelete(ctx, p)
		Consistently(vaExists(ctx, name)).WithTimeout(time.Second).Should(BeTrue())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
			return env.Client.Update(ctx, n)
		})).To(Succeed())
		Eventually(vaExists(ctx, name)).Should(BeFalse())
		Expect(forcedDetaches("out-of-service")).To(Equal(before + 1))
	})

	It("force-detaches a volume still mounted on an unready node after upstream's maximum wait for unmount", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "timeout")
		node := ns + "-n"
		createNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name, vol := vaName(ns+"-h", driver, node), unique(driver, ns+"-h")
		attachVA(ctx, name, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		setInUse(ctx, node, vol)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			n.Status.Conditions[0].Status = corev1.ConditionUnknown
			return env.Client.Status().Update(ctx, n)
		})).To(Succeed())
		before := forcedDetaches("timeout")

		// Unneeded but mounted, the node unready: kept within the wait...
		forceDelete(ctx, p)
		Consistently(vaExists(ctx, name)).WithTimeout(time.Second).Should(BeTrue())
		// ...and detached once 6 minutes have passed, at the next sync of the node (another
		// pod scheduled there brings it).
		clk.Set(6*time.Minute + 5*time.Second)
		DeferCleanup(func() { clk.Set(0) })
		createVolume(ctx, ns, "other", csiSource(driver, ns+"-other"), corev1.ReadWriteOnce)
		createPod(ctx, ns, "other", node, claimVolume("other"))
		Eventually(vaExists(ctx, name)).Should(BeFalse())
		Expect(forcedDetaches("timeout")).To(Equal(before + 1))
	})

	It("keeps a deleted node's volume its last status had in use, and detaches the one it had not", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "deleted")
		node := ns + "-n"
		createNode(ctx, node, true)
		createVolume(ctx, ns, "used", csiSource(driver, ns+"-used"), corev1.ReadWriteOnce)
		createVolume(ctx, ns, "free", csiSource(driver, ns+"-free"), corev1.ReadWriteOnce)
		usedVA, freeVA := vaName(ns+"-used", driver, node), vaName(ns+"-free", driver, node)
		used := createPod(ctx, ns, "used", node, claimVolume("used"))
		free := createPod(ctx, ns, "free", node, claimVolume("free"))
		attachVA(ctx, usedVA, false)
		attachVA(ctx, freeVA, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(unique(driver, ns+"-used"), unique(driver, ns+"-free")))
		setInUse(ctx, node, unique(driver, ns+"-used"))

		Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})).To(Succeed())
		forceDelete(ctx, used)
		forceDelete(ctx, free)
		// The free volume is detached: the controller acted on the deleted node.
		Eventually(vaExists(ctx, freeVA)).Should(BeFalse())
		Consistently(vaExists(ctx, usedVA)).WithTimeout(2 * time.Second).Should(BeTrue())
	})

	It("after a restart, keeps a volume the node still uses and one a pod needs, and detaches the first once unmounted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "restart")
		node := ns + "-n"
		createNode(ctx, node, true)
		createVolume(ctx, ns, "gone", csiSource(driver, ns+"-gone"), corev1.ReadWriteOnce)
		createVolume(ctx, ns, "kept", csiSource(driver, ns+"-kept"), corev1.ReadWriteOnce)
		goneVA, keptVA := vaName(ns+"-gone", driver, node), vaName(ns+"-kept", driver, node)
		gone, kept := unique(driver, ns+"-gone"), unique(driver, ns+"-kept")
		leaving := createPod(ctx, ns, "leaving", node, claimVolume("gone"))
		staying := createPod(ctx, ns, "staying", node, claimVolume("kept"))
		attachVA(ctx, goneVA, false)
		attachVA(ctx, keptVA, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(gone, kept))
		setInUse(ctx, node, gone, kept)
		Eventually(events(ctx, staying)).Should(HaveLen(1))

		Expect(env.StopManager()).To(Succeed())
		forceDelete(ctx, leaving)
		Expect(startManager()).To(Succeed())

		// A pod created after the restart is attached: the controller runs.
		createVolume(ctx, ns, "new", csiSource(driver, ns+"-new"), corev1.ReadWriteOnce)
		createPod(ctx, ns, "new", node, claimVolume("new"))
		Eventually(vaExists(ctx, vaName(ns+"-new", driver, node))).Should(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(getVA(ctx, g, goneVA).DeletionTimestamp).To(BeNil())
			g.Expect(getVA(ctx, g, keptVA).DeletionTimestamp).To(BeNil())
			g.Expect(nodeAttached(ctx, node)(g)).To(ConsistOf(gone, kept))
		}).WithTimeout(2 * time.Second).Should(Succeed())
		// Reported before the restart: no second SuccessfulAttachVolume.
		Expect(events(ctx, staying)(Default)).To(HaveLen(1))

		setInUse(ctx, node, kept)
		Eventually(vaExists(ctx, goneVA)).Should(BeFalse())
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(kept))
		Expect(vaExists(ctx, keptVA)()).To(BeTrue())
	})
})
