package ephemeralvolume_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/testenv"
)

func claimSpec(class string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: &class,
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
	}
}

// createPod creates a pod with a generic ephemeral volume "scratch" and a plain emptyDir.
func createPod(ctx context.Context, ns, name string) *corev1.Pod {
	GinkgoHelper()
	p := testenv.NewPod(ns, name, "")
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"type": "scratch"}, Annotations: map[string]string{"note": "from template"}},
				Spec:       claimSpec("fast"),
			},
		}}},
	}
	return env.CreatePod(ctx, p)
}

func getClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	got := &corev1.PersistentVolumeClaim{}
	return got, env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, got)
}

// expectClaimOf waits for the pod's claim, made from the template and controlled by the pod.
func expectClaimOf(ctx context.Context, p *corev1.Pod) *corev1.PersistentVolumeClaim {
	GinkgoHelper()
	var pvc *corev1.PersistentVolumeClaim
	Eventually(func(g Gomega) {
		got, err := getClaim(ctx, p.Namespace, p.Name+"-scratch")
		g.Expect(err).NotTo(HaveOccurred())
		pvc = got
	}).Should(Succeed())
	Expect(pvc.OwnerReferences).To(Equal([]metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: new(true), BlockOwnerDeletion: new(true),
	}}))
	Expect(pvc.Labels).To(Equal(map[string]string{"type": "scratch"}))
	Expect(pvc.Annotations).To(HaveKeyWithValue("note", "from template"))
	Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal("fast")))
	Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("2Gi"))
	return pvc
}
