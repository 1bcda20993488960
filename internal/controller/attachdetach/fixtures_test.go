package attachdetach_test

import (
	"context"
	"crypto/sha256"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/attachdetach"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// startManager runs the controller alone, on clk.
func startManager() error {
	return env.StartManagerWith([]string{attachdetach.ControllerName}, nil,
		setup.OverrideFor(attachdetach.ControllerName, func(r *attachdetach.Reconciler) { r.Clock = clk }))
}

// registerNode plays the kubelet registering a Ready node (testenv's stand-in), managed by
// the controller when managed (the kubelet's annotation), with its CSINode.
func registerNode(ctx context.Context, name string, managed bool) {
	GinkgoHelper()
	var opts []testenv.NodeOption
	if managed {
		opts = append(opts, testenv.NodeAnnotations(map[string]string{attachdetach.ManagedAnnotation: "true"}))
	}
	env.Node(ctx, name, opts...)
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
	p := testenv.NewPod(ns, name, node)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: src}}
	return env.CreatePod(ctx, p)
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

// forcedDetaches reads upstream's forced detach counter of the reason from the registry
// kcm's /metrics serves.
func forcedDetaches(reason string) float64 {
	GinkgoHelper()
	return testenv.Sample("attach_detach_controller_attachdetach_controller_forced_detaches", map[string]string{"reason": reason})
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
