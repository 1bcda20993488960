package pvcprotection_test

import (
	"context"
	"slices"
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
// the test plays it, through env.SetPodStatus).
func createPod(ctx context.Context, ns, name string, vol corev1.VolumeSource, scheduled bool) *corev1.Pod {
	GinkgoHelper()
	node := ""
	if scheduled {
		node = "node-1"
	}
	p := testenv.NewPod(ns, name, node)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: vol}}
	return env.CreatePod(ctx, p)
}

func claimVolume(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func ephemeralVolume() corev1.VolumeSource {
	return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: claimSpec()},
	}}
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
