package vacprotection_test

import (
	"context"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/vacprotection"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// blind makes the controller's cache find no claim or volume by class, as a cache that
	// has not yet seen them would: only the live check can then keep a class.
	blind atomic.Bool
)

func TestVACProtectionController(t *testing.T) {
	testenv.RunSuite(t, "volumeattributesclass-protection-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{vacprotection.ControllerName}, nil,
		setup.OverrideFor[vacprotection.Reconciler](vacprotection.ControllerName, func(r *vacprotection.Reconciler) {
			r.Client = &blindClient{Client: r.Client}
		}))).To(Succeed())
})

// blindClient answers the lists by class with nothing while blind is set.
type blindClient struct{ client.Client }

func (c *blindClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if blind.Load() {
		switch l := list.(type) {
		case *corev1.PersistentVolumeClaimList:
			l.Items = nil
		case *corev1.PersistentVolumeList:
			l.Items = nil
		}
	}
	return nil
}

func createClass(ctx context.Context) *storagev1.VolumeAttributesClass {
	GinkgoHelper()
	vac := &storagev1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "vac-"},
		DriverName: "csi.example.com",
		Parameters: map[string]string{"iops": "3000"},
	}
	Expect(env.Client.Create(ctx, vac)).To(Succeed())
	return vac
}

func createClaim(ctx context.Context, ns string, class *string) *corev1.PersistentVolumeClaim {
	GinkgoHelper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "claim-"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:                 corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeAttributesClassName: class,
		},
	}
	Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	return pvc
}

func createVolume(ctx context.Context, class string) *corev1.PersistentVolume {
	GinkgoHelper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.example.com", VolumeHandle: "handle"}},
			VolumeAttributesClassName: ptr.To(class),
		},
	}
	Expect(env.Client.Create(ctx, pv)).To(Succeed())
	return pv
}

// change re-reads obj and applies edit with write until it sticks.
func change[T client.Object](ctx context.Context, obj T, write func(context.Context, client.Object, ...client.UpdateOption) error, edit func(T)) {
	GinkgoHelper()
	Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		edit(obj)
		return write(ctx, obj)
	}).Should(Succeed())
}

// updateStatus writes the status subresource, as change's write.
func updateStatus(ctx context.Context, o client.Object, _ ...client.UpdateOption) error {
	return env.Client.Status().Update(ctx, o)
}

// remove deletes a claim or volume for good: no binder or protection controller runs here
// to release their own finalizers.
func remove(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	change(ctx, obj, env.Client.Update, func(o client.Object) { o.SetFinalizers(nil) })
	Expect(env.Client.Delete(ctx, obj)).To(Succeed())
}

func gone(ctx context.Context, vac *storagev1.VolumeAttributesClass) {
	GinkgoHelper()
	Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(vac), &storagev1.VolumeAttributesClass{}))
	}).Should(BeTrue(), "VolumeAttributesClass %s released and gone", vac.Name)
}

// held checks, for a while, that each class is being deleted and still holds the finalizer.
func held(ctx context.Context, vacs ...*storagev1.VolumeAttributesClass) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		for _, vac := range vacs {
			got := &storagev1.VolumeAttributesClass{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vac), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil())
			g.Expect(got.Finalizers).To(ContainElement(vacprotection.Finalizer))
		}
	}).Should(Succeed())
}

// withFinalizer waits until the class holds the finalizer (admission's or the controller's).
func withFinalizer(ctx context.Context, vac *storagev1.VolumeAttributesClass) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &storagev1.VolumeAttributesClass{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(vac), got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(vacprotection.Finalizer))
	}).Should(Succeed())
}

// deleteUnusedWitness deletes a class nothing refers to and waits for it to go: the
// controller is running and has handled every deletion made before it (one worker).
func deleteUnusedWitness(ctx context.Context) {
	GinkgoHelper()
	witness := createClass(ctx)
	withFinalizer(ctx, witness)
	Expect(env.Client.Delete(ctx, witness)).To(Succeed())
	gone(ctx, witness)
}

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
