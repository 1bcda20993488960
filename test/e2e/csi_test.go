//go:build e2e && linux

package e2e_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

// Names the kubelet and the external CSI components use, which the attach-detach controller
// reads or writes as upstream's does.
const (
	// controllerManagedAttachDetach is the annotation a kubelet puts on its Node when the
	// controller manager, not the kubelet, attaches and detaches its volumes (kubelet's default).
	controllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"
	// storageProvisionerAnnotation is how the binder hands a claim to an external provisioner.
	storageProvisionerAnnotation = "volume.kubernetes.io/storage-provisioner"
	// provisionedByAnnotation marks a PV its provisioner created.
	provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
)

// fakeCSI plays, through the public API, the parts of a CSI driver that run outside the
// controller manager: its registration (a CSIDriver that requires attach, the driver in each
// node's CSINode, as the kubelet's plugin registration writes it), the external provisioner
// (a PV with a CSI source bound to each claim of its StorageClass that the binder hands it;
// a Released PV deleted once no VolumeAttachment names it) and the external attacher
// (status.attached on its VolumeAttachments). The kubelet's volume manager is played by
// setVolumeInUse. Everything it creates goes when the spec ends.
type fakeCSI struct {
	driver, class string
	cs            kubernetes.Interface
	factory       informers.SharedInformerFactory
	vas           cache.Indexer

	mu sync.Mutex
	// vaSeen is when the test first saw each VolumeAttachment, by name.
	vaSeen map[string]time.Time
}

// installFakeCSI registers driver on the suite's nodes with a StorageClass of the same name
// (Immediate binding, Delete, expandable), and starts playing its external components.
func installFakeCSI(ctx context.Context, driver string) *fakeCSI {
	GinkgoHelper()
	cs := newClientset()
	f := &fakeCSI{driver: driver, class: driver, cs: cs, vaSeen: map[string]time.Time{}}

	csiDriver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(false)},
	}
	Expect(cl.Create(ctx, csiDriver)).To(Succeed())
	class := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: f.class},
		Provisioner:          driver,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	Expect(cl.Create(ctx, class)).To(Succeed())
	for i := range nodeCount {
		f.registerOnNode(ctx, cluster.NodeName(i))
	}

	stop := make(chan struct{})
	f.factory = informers.NewSharedInformerFactory(cs, 2*time.Second)
	vaInformer := f.factory.Storage().V1().VolumeAttachments().Informer()
	f.vas = vaInformer.GetIndexer()
	_, err := vaInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.attach(obj.(*storagev1.VolumeAttachment), true) },
		UpdateFunc: func(_, obj any) { f.attach(obj.(*storagev1.VolumeAttachment), false) },
	})
	Expect(err).NotTo(HaveOccurred())
	// The informers' resync (2s) replays every object: an action that failed is tried again.
	_, err = f.factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.provision(obj.(*corev1.PersistentVolumeClaim)) },
		UpdateFunc: func(_, obj any) { f.provision(obj.(*corev1.PersistentVolumeClaim)) },
	})
	Expect(err).NotTo(HaveOccurred())
	_, err = f.factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.deleteReleased(obj.(*corev1.PersistentVolume)) },
		UpdateFunc: func(_, obj any) { f.deleteReleased(obj.(*corev1.PersistentVolume)) },
	})
	Expect(err).NotTo(HaveOccurred())
	f.factory.Start(stop)
	for typ, ok := range f.factory.WaitForCacheSync(stop) {
		Expect(ok).To(BeTrue(), "informer of %v synced", typ)
	}

	DeferCleanup(func(ctx SpecContext) {
		close(stop)
		f.factory.Shutdown()
		// Volumes the spec left (a claim's PV after its namespace went, with no provisioner
		// any more to delete it) and the driver's registration.
		pvs := &corev1.PersistentVolumeList{}
		Expect(cl.List(ctx, pvs)).To(Succeed())
		for i := range pvs.Items {
			if pvs.Items[i].Spec.StorageClassName == f.class {
				Expect(client.IgnoreNotFound(cl.Delete(ctx, &pvs.Items[i]))).To(Succeed())
			}
		}
		for i := range nodeCount {
			f.unregisterFromNode(ctx, cluster.NodeName(i))
		}
		Expect(client.IgnoreNotFound(cl.Delete(ctx, class))).To(Succeed())
		Expect(client.IgnoreNotFound(cl.Delete(ctx, csiDriver))).To(Succeed())
	})
	return f
}

// newClientset is a clientset of the administrator, without a client-side rate limit.
func newClientset() kubernetes.Interface {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(local.Config)
	Expect(err).NotTo(HaveOccurred())
	return cs
}

// registerOnNode adds the driver to the node's CSINode, creating it as the kubelet does.
func (f *fakeCSI) registerOnNode(ctx context.Context, node string) {
	GinkgoHelper()
	entry := storagev1.CSINodeDriver{Name: f.driver, NodeID: node}
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		csiNode := &storagev1.CSINode{}
		err := cl.Get(ctx, client.ObjectKey{Name: node}, csiNode)
		if apierrors.IsNotFound(err) {
			n := &corev1.Node{}
			if err := cl.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			csiNode = &storagev1.CSINode{
				ObjectMeta: metav1.ObjectMeta{Name: node, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID,
				}}},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{entry}},
			}
			return cl.Create(ctx, csiNode)
		}
		if err != nil {
			return err
		}
		csiNode.Spec.Drivers = append(slices.DeleteFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool {
			return d.Name == f.driver
		}), entry)
		return cl.Update(ctx, csiNode)
	})).To(Succeed(), "CSINode %s", node)
}

// unregisterFromNode takes the driver out of the node's CSINode.
func (f *fakeCSI) unregisterFromNode(ctx context.Context, node string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		csiNode := &storagev1.CSINode{}
		if err := cl.Get(ctx, client.ObjectKey{Name: node}, csiNode); err != nil {
			return client.IgnoreNotFound(err)
		}
		csiNode.Spec.Drivers = slices.DeleteFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool {
			return d.Name == f.driver
		})
		return cl.Update(ctx, csiNode)
	})).To(Succeed(), "CSINode %s", node)
}

// attach plays the external attacher: a VolumeAttachment of this driver is reported
// attached at once. added says the informer saw it created, which the latency spec times.
func (f *fakeCSI) attach(va *storagev1.VolumeAttachment, added bool) {
	if va.Spec.Attacher != f.driver {
		return
	}
	if added {
		f.mu.Lock()
		if _, ok := f.vaSeen[va.Name]; !ok {
			f.vaSeen[va.Name] = time.Now()
		}
		f.mu.Unlock()
	}
	if va.Status.Attached || va.DeletionTimestamp != nil {
		return
	}
	va = va.DeepCopy()
	va.Status.Attached = true
	if _, err := f.cs.StorageV1().VolumeAttachments().UpdateStatus(context.Background(), va, metav1.UpdateOptions{}); err != nil &&
		!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		fmt.Fprintf(GinkgoWriter, "fake attacher: VolumeAttachment %s: %v\n", va.Name, err)
	}
}

// provision plays the external provisioner: a claim the binder handed to this driver gets a
// PV named as external-provisioner names it, bound to the claim, with a CSI source.
func (f *fakeCSI) provision(claim *corev1.PersistentVolumeClaim) {
	if claim.Annotations[storageProvisionerAnnotation] != f.driver || claim.Spec.VolumeName != "" ||
		claim.DeletionTimestamp != nil || ptr.Deref(claim.Spec.StorageClassName, "") != f.class {
		return
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(claim.UID),
			Annotations: map[string]string{provisionedByAnnotation: f.driver},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			StorageClassName:              f.class,
			VolumeAttributesClassName:     claim.Spec.VolumeAttributesClassName,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: f.driver, VolumeHandle: "vol-" + string(claim.UID),
			}},
		},
	}
	if _, err := f.cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		fmt.Fprintf(GinkgoWriter, "fake provisioner: claim %s/%s: %v\n", claim.Namespace, claim.Name, err)
	}
}

// deleteReleased plays the external provisioner's deletion: a Released PV it provisioned
// with the Delete policy goes, once no VolumeAttachment names it (the attacher has detached).
func (f *fakeCSI) deleteReleased(pv *corev1.PersistentVolume) {
	if pv.Annotations[provisionedByAnnotation] != f.driver || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
		return
	}
	for _, obj := range f.vas.List() {
		if ptr.Deref(obj.(*storagev1.VolumeAttachment).Spec.Source.PersistentVolumeName, "") == pv.Name {
			return
		}
	}
	if err := f.cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{}); err != nil &&
		!apierrors.IsNotFound(err) {
		fmt.Fprintf(GinkgoWriter, "fake provisioner: deleting PV %s: %v\n", pv.Name, err)
	}
}

// seen is when the test first saw the VolumeAttachment created, if it did.
func (f *fakeCSI) seen(name string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.vaSeen[name]
	return t, ok
}

// uniqueVolumeName is the name the attach-detach controller and the kubelet give a CSI
// volume in node.status.volumesAttached and volumesInUse: the plugin's name, then
// <driver>^<volume handle>.
func (f *fakeCSI) uniqueVolumeName(pv *corev1.PersistentVolume) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName("kubernetes.io/csi/" + f.driver + "^" + pv.Spec.CSI.VolumeHandle)
}

// attachmentName is the name upstream's CSI attacher gives the VolumeAttachment of a volume
// on a node: csi- and the SHA-256 of volume handle, driver and node.
func (f *fakeCSI) attachmentName(pv *corev1.PersistentVolume, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(pv.Spec.CSI.VolumeHandle+f.driver+node)))
}

// setVolumeInUse plays the kubelet's volume manager: a volume of a pod it runs is listed in
// node.status.volumesInUse (before it is mounted), and taken out once it is unmounted.
func setVolumeInUse(ctx context.Context, node string, volume corev1.UniqueVolumeName, inUse bool) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		has := slices.Contains(n.Status.VolumesInUse, volume)
		switch {
		case inUse && !has:
			n.Status.VolumesInUse = append(n.Status.VolumesInUse, volume)
		case !inUse && has:
			n.Status.VolumesInUse = slices.DeleteFunc(n.Status.VolumesInUse, func(v corev1.UniqueVolumeName) bool { return v == volume })
		default:
			return nil
		}
		return cl.Status().Update(ctx, n)
	})).To(Succeed(), "volumesInUse of node %s", node)
}

// ensureControllerManagedAttachDetach puts the annotation a kubelet puts on its Node on the
// suite's nodes, which KWOK's nodes lack, so that the attach-detach controller manages their
// volumes; it reports the nodes that did not have it.
func ensureControllerManagedAttachDetach(ctx context.Context) []string {
	GinkgoHelper()
	var added []string
	for i := range nodeCount {
		node := &corev1.Node{}
		Expect(cl.Get(ctx, client.ObjectKey{Name: cluster.NodeName(i)}, node)).To(Succeed())
		if node.Annotations[controllerManagedAttachDetach] == "true" {
			continue
		}
		patch := client.MergeFrom(node.DeepCopy())
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[controllerManagedAttachDetach] = "true"
		Expect(cl.Patch(ctx, node, patch)).To(Succeed())
		added = append(added, node.Name)
	}
	return added
}

// attachedVolumes are the names in node.status.volumesAttached.
func attachedVolumes(g Gomega, ctx context.Context, node string) []corev1.UniqueVolumeName {
	n := &corev1.Node{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
	var names []corev1.UniqueVolumeName
	for _, v := range n.Status.VolumesAttached {
		names = append(names, v.Name)
	}
	return names
}
