package pvprotection_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/pvprotection"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPVProtectionController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-protection-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"persistentvolume-protection-controller"})
})

func createVolume(ctx context.Context) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv"}},
		},
	}
	Expect(env.Client.Create(ctx, pv)).To(Succeed())
	return pv
}

// update re-reads the volume and applies change with the given writer until it sticks.
func update(ctx context.Context, pv *corev1.PersistentVolume, w func(context.Context, client.Object) error, change func(*corev1.PersistentVolume)) {
	GinkgoHelper()
	Eventually(func() error {
		got := &corev1.PersistentVolume{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), got); err != nil {
			return err
		}
		change(got)
		return w(ctx, got)
	}).Should(Succeed())
}

func writeSpec(ctx context.Context, o client.Object) error { return env.Client.Update(ctx, o) }
func writeStatus(ctx context.Context, o client.Object) error {
	return env.Client.Status().Update(ctx, o)
}

func setPhase(phase corev1.PersistentVolumePhase) func(*corev1.PersistentVolume) {
	return func(pv *corev1.PersistentVolume) { pv.Status.Phase = phase }
}

func getVolume(ctx context.Context, pv *corev1.PersistentVolume) func() (*corev1.PersistentVolume, error) {
	return func() (*corev1.PersistentVolume, error) {
		got := &corev1.PersistentVolume{}
		return got, env.Client.Get(ctx, client.ObjectKeyFromObject(pv), got)
	}
}

var _ = Describe("persistentvolume-protection-controller", func() {
	It("puts the finalizer back on a live volume that lost it", func(ctx SpecContext) {
		pv := createVolume(ctx)
		update(ctx, pv, writeSpec, func(got *corev1.PersistentVolume) {
			got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == pvprotection.Finalizer })
		})
		Eventually(func(g Gomega) {
			got, err := getVolume(ctx, pv)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ContainElement(pvprotection.Finalizer))
		}).Should(Succeed())
	})

	It("keeps a deleted volume while it is Bound and lets it go once Released", func(ctx SpecContext) {
		pv := createVolume(ctx)
		// The controller adds the finalizer if admission did not.
		Eventually(func(g Gomega) {
			got, err := getVolume(ctx, pv)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ContainElement(pvprotection.Finalizer))
		}).Should(Succeed())
		update(ctx, pv, writeStatus, setPhase(corev1.VolumeBound))
		Expect(env.Client.Delete(ctx, pv)).To(Succeed())
		Consistently(func(g Gomega) {
			got, err := getVolume(ctx, pv)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil())
			g.Expect(got.Finalizers).To(ContainElement(pvprotection.Finalizer))
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("the binder releasing the volume (played by the test)")
		update(ctx, pv, writeStatus, setPhase(corev1.VolumeReleased))
		Eventually(func() bool {
			_, err := getVolume(ctx, pv)()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("lets an Available volume go at once", func(ctx SpecContext) {
		pv := createVolume(ctx)
		update(ctx, pv, writeStatus, setPhase(corev1.VolumeAvailable))
		update(ctx, pv, writeSpec, func(got *corev1.PersistentVolume) {
			if !slices.Contains(got.Finalizers, pvprotection.Finalizer) {
				got.Finalizers = append(got.Finalizers, pvprotection.Finalizer)
			}
		})
		Expect(env.Client.Delete(ctx, pv)).To(Succeed())
		Eventually(func() bool {
			_, err := getVolume(ctx, pv)()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})
})
