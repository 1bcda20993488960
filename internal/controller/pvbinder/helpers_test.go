package pvbinder_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

// restartWithSyncPeriod runs the spec with another --pvclaimbinder-sync-period, the suite's
// restored after it.
func restartWithSyncPeriod(period string) {
	GinkgoHelper()
	Expect(env.StopManager()).To(Succeed())
	Expect(env.StartManager([]string{"persistentvolume-binder-controller"}, "--pvclaimbinder-sync-period="+period)).To(Succeed())
	DeferCleanup(func() {
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager([]string{"persistentvolume-binder-controller"}, suiteSyncPeriod)).To(Succeed())
	})
}

type volOpt func(*corev1.PersistentVolume)

// createVolume creates a CSI volume (one an external driver owns) of the class, RWO and
// Retain unless opts say otherwise, and waits until the controller made it Available.
func createVolume(ctx context.Context, name, class, size string, opts ...volOpt) *corev1.PersistentVolume {
	GinkgoHelper()
	v := createVolumeNoWait(ctx, name, class, size, opts...)
	if v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID == "" {
		Eventually(volumePhase(ctx, name)).Should(Equal(corev1.VolumeAvailable))
	}
	return v
}

// createVolumeNoWait is createVolume without waiting: the volume is still Pending.
func createVolumeNoWait(ctx context.Context, name, class, size string, opts ...volOpt) *corev1.PersistentVolume {
	GinkgoHelper()
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: name},
			},
		},
	}
	for _, o := range opts {
		o(v)
	}
	Expect(env.Client.Create(ctx, v)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { deleteVolume(ctx, name) })
	return v
}

func withModes(m ...corev1.PersistentVolumeAccessMode) volOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.AccessModes = m }
}
func withLabel(k, val string) volOpt {
	return func(v *corev1.PersistentVolume) { v.Labels = map[string]string{k: val} }
}
func blockMode(v *corev1.PersistentVolume) { v.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }
func withPolicy(p corev1.PersistentVolumeReclaimPolicy) volOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = p }
}
func preBoundTo(ns, name string) volOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name}
	}
}
func nfs(v *corev1.PersistentVolume) {
	v.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/" + v.Name}}
}
func onNode(host string) volOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{host},
			}}}},
		}}
	}
}

// deleteVolume deletes a volume, dropping the pv-protection finalizer admission adds (no
// pv-protection controller runs here).
func deleteVolume(ctx context.Context, name string) {
	GinkgoHelper()
	removeFinalizers(ctx, &corev1.PersistentVolume{}, types.NamespacedName{Name: name})
}

// removeFinalizers deletes the object and clears its finalizers, so it goes at once.
func removeFinalizers(ctx context.Context, obj client.Object, key types.NamespacedName) {
	GinkgoHelper()
	Eventually(func() error {
		if err := env.Client.Get(ctx, key, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		if obj.GetDeletionTimestamp() == nil {
			if err := env.Client.Delete(ctx, obj); err != nil {
				return client.IgnoreNotFound(err)
			}
			return fmt.Errorf("deleting")
		}
		if len(obj.GetFinalizers()) == 0 {
			return fmt.Errorf("going")
		}
		obj.SetFinalizers(nil)
		return client.IgnoreNotFound(env.Client.Update(ctx, obj))
	}).Should(Succeed())
}

type claimOpt func(*corev1.PersistentVolumeClaim)

// createClaim creates a claim of the class (nil: none set), RWO, of the size.
func createClaim(ctx context.Context, ns, name string, class *string, size string, opts ...claimOpt) *corev1.PersistentVolumeClaim {
	GinkgoHelper()
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	for _, o := range opts {
		o(c)
	}
	Expect(env.Client.Create(ctx, c)).To(Succeed())
	return c
}

func wanting(m ...corev1.PersistentVolumeAccessMode) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}
func wantingBlock(c *corev1.PersistentVolumeClaim) {
	c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
}
func selecting(k, v string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}
func naming(volume string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = volume }
}

func getClaim(ctx context.Context, ns, name string) func(g Gomega) *corev1.PersistentVolumeClaim {
	return testenv.Get[corev1.PersistentVolumeClaim](ctx, env, ns, name)
}

func getVolume(ctx context.Context, name string) func(g Gomega) *corev1.PersistentVolume {
	return testenv.Get[corev1.PersistentVolume](ctx, env, "", name)
}

func volumePhase(ctx context.Context, name string) func(g Gomega) corev1.PersistentVolumePhase {
	return func(g Gomega) corev1.PersistentVolumePhase { return getVolume(ctx, name)(g).Status.Phase }
}

func claimPhase(ctx context.Context, ns, name string) func(g Gomega) corev1.PersistentVolumeClaimPhase {
	return func(g Gomega) corev1.PersistentVolumeClaimPhase { return getClaim(ctx, ns, name)(g).Status.Phase }
}

// expectBound waits for the complete binding of claim and volume, and checks who bound it:
// the controller chose the volume (claim bound-by-controller) unless the claim named it, and
// the controller set the claimRef (volume bound-by-controller) unless the volume named it.
func expectBound(ctx context.Context, ns, claimName, volume string, claimByController, volumeByController bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := getClaim(ctx, ns, claimName)(g)
		v := getVolume(ctx, volume)(g)
		g.Expect(c.Spec.VolumeName).To(Equal(volume))
		g.Expect(c.Status.Phase).To(Equal(corev1.ClaimBound))
		g.Expect(c.Annotations).To(HaveKeyWithValue("pv.kubernetes.io/bind-completed", "yes"))
		g.Expect(c.Status.Capacity.Storage().Cmp(*v.Spec.Capacity.Storage())).To(BeZero())
		g.Expect(c.Status.AccessModes).To(Equal(v.Spec.AccessModes))
		g.Expect(v.Spec.ClaimRef).NotTo(BeNil())
		g.Expect(v.Spec.ClaimRef.UID).To(Equal(c.UID))
		g.Expect(v.Spec.ClaimRef.Namespace + "/" + v.Spec.ClaimRef.Name).To(Equal(ns + "/" + claimName))
		g.Expect(v.Status.Phase).To(Equal(corev1.VolumeBound))
		g.Expect(v.Status.LastPhaseTransitionTime).NotTo(BeNil())
		g.Expect(c.Annotations).To(haveKeyIf(claimByController, "pv.kubernetes.io/bound-by-controller"))
		g.Expect(v.Annotations).To(haveKeyIf(volumeByController, "pv.kubernetes.io/bound-by-controller"))
	}).Should(Succeed())
}

func haveKeyIf(want bool, key string) OmegaMatcher {
	if want {
		return HaveKeyWithValue(key, "yes")
	}
	return Not(HaveKey(key))
}

// claimNamed and volumeNamed name a claim and a volume for env.ExpectEvent.
func claimNamed(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func volumeNamed(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// eventReasons are the reasons of the Events about the named object (of the kind), each once.
func eventReasons(ctx context.Context, kind, name string) []string {
	list := &eventsv1.EventList{}
	Expect(env.Client.List(ctx, list)).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && !slices.Contains(reasons, e.Reason) {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func createClass(ctx context.Context, name, provisioner string, mode storagev1.VolumeBindingMode, annotations map[string]string) {
	GinkgoHelper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name, Annotations: annotations},
		Provisioner:       provisioner,
		VolumeBindingMode: &mode,
	}
	Expect(env.Client.Create(ctx, sc)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, sc))).To(Succeed())
	})
}

func isNotFound(ctx context.Context, obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}
}
