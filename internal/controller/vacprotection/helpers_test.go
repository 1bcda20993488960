package vacprotection_test

import (
	"context"

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
)

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
