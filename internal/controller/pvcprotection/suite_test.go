package pvcprotection_test

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

	"github.com/kcm/kcm/internal/controller/pvcprotection"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPVCProtectionController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolumeclaim-protection-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"persistentvolumeclaim-protection-controller"})
})

func claimSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

func createClaim(ctx context.Context, ns, name string, owner *corev1.Pod) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: claimSpec()}
	if owner != nil {
		pvc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("Pod"))}
	}
	Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	return pvc
}

// createPod creates a pod with one volume, on node-1 when scheduled is set (no kubelet runs:
// the test plays it).
func createPod(ctx context.Context, ns, name string, vol corev1.VolumeSource, scheduled bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: vol}},
		},
	}
	if scheduled {
		p.Spec.NodeName = "node-1"
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

func claimVolume(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func ephemeralVolume() corev1.VolumeSource {
	return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: claimSpec()},
	}}
}

func setPhase(ctx context.Context, p *corev1.Pod, phase corev1.PodPhase) {
	p.Status.Phase = phase
	Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
}

// forceDelete removes a pod at once, as the kubelet's final delete does.
func forceDelete(ctx context.Context, p *corev1.Pod) {
	Expect(env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
}

func getClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) func() (*corev1.PersistentVolumeClaim, error) {
	return func() (*corev1.PersistentVolumeClaim, error) {
		got := &corev1.PersistentVolumeClaim{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), got)
		return got, err
	}
}

func expectGone(ctx context.Context, pvc *corev1.PersistentVolumeClaim) {
	GinkgoHelper()
	Eventually(func() bool {
		_, err := getClaim(ctx, pvc)()
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "claim %s should be deleted", pvc.Name)
}

// expectKept checks for a few seconds that the deleted claim stays, held by the finalizer.
func expectKept(ctx context.Context, pvc *corev1.PersistentVolumeClaim) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		got, err := getClaim(ctx, pvc)()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(got.Finalizers).To(ContainElement(pvcprotection.Finalizer))
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

func expectUnused(ctx context.Context, pvc *corev1.PersistentVolumeClaim, status corev1.ConditionStatus, reason, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got, err := getClaim(ctx, pvc)()
		g.Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(got.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
			return c.Type == corev1.PersistentVolumeClaimUnused
		})
		g.Expect(i).To(BeNumerically(">=", 0), "no Unused condition")
		c := got.Status.Conditions[i]
		g.Expect([]string{string(c.Status), c.Reason, c.Message}).To(Equal([]string{string(status), reason, message}))
		g.Expect(c.LastTransitionTime.IsZero()).To(BeFalse())
	}).Should(Succeed())
}

var _ = Describe("persistentvolumeclaim-protection-controller", func() {
	It("puts the finalizer back on a live claim that lost it", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		By("removing the finalizer the admission plugin may have added")
		Eventually(func() error {
			got, err := getClaim(ctx, pvc)()
			if err != nil {
				return err
			}
			got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == pvcprotection.Finalizer })
			return env.Client.Update(ctx, got)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, pvc)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ContainElement(pvcprotection.Finalizer))
		}).Should(Succeed())
	})

	It("keeps a deleted claim while a scheduled pod object names it, even Succeeded, and releases it when the pod is deleted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		p := createPod(ctx, ns, "web", claimVolume("data"), true)
		setPhase(ctx, p, corev1.PodRunning)
		Expect(env.Client.Delete(ctx, pvc)).To(Succeed())
		expectKept(ctx, pvc)

		By("the pod succeeding: upstream keeps the claim while the pod object exists")
		setPhase(ctx, p, corev1.PodSucceeded)
		expectKept(ctx, pvc)

		By("deleting the pod")
		forceDelete(ctx, p)
		expectGone(ctx, pvc)
	})

	It("deletes an unused claim promptly, and one that only an unscheduled pod names", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		unused := createClaim(ctx, ns, "unused", nil)
		pending := createClaim(ctx, ns, "pending", nil)
		createPod(ctx, ns, "waiting", claimVolume("pending"), false)
		Expect(env.Client.Delete(ctx, unused)).To(Succeed())
		Expect(env.Client.Delete(ctx, pending)).To(Succeed())
		expectGone(ctx, unused)
		expectGone(ctx, pending)
	})

	It("keeps the claim of a pod's generic ephemeral volume, but not a same-named claim the pod does not own", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		owner := createPod(ctx, ns, "owner", ephemeralVolume(), true)
		owned := createClaim(ctx, ns, "owner-data", owner)
		other := createPod(ctx, ns, "other", ephemeralVolume(), true)
		foreign := createClaim(ctx, ns, "other-data", nil)
		Expect(env.Client.Delete(ctx, owned)).To(Succeed())
		Expect(env.Client.Delete(ctx, foreign)).To(Succeed())
		expectGone(ctx, foreign)
		expectKept(ctx, owned)
		Expect(other).NotTo(BeNil())

		By("deleting the owner pod")
		forceDelete(ctx, owner)
		expectGone(ctx, owned)
	})

	It("sets the Unused condition of a bound claim as pods come and finish", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		By("the binder binding the claim (played by the test)")
		Eventually(func() error {
			got, err := getClaim(ctx, pvc)()
			if err != nil {
				return err
			}
			got.Status.Phase = corev1.ClaimBound
			return env.Client.Status().Update(ctx, got)
		}).Should(Succeed())
		expectUnused(ctx, pvc, corev1.ConditionTrue, "NoPodsUsingPVC", "No pods are currently referencing this PVC")

		By("a pod naming it, not scheduled yet")
		p := createPod(ctx, ns, "web", claimVolume("data"), false)
		expectUnused(ctx, pvc, corev1.ConditionFalse, "PodUsingPVC", "A pod is currently referencing this PVC")

		By("the pod failing")
		setPhase(ctx, p, corev1.PodFailed)
		expectUnused(ctx, pvc, corev1.ConditionTrue, "NoPodsUsingPVC", "No pods are currently referencing this PVC")
	})
})
