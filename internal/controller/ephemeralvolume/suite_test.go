package ephemeralvolume_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestEphemeralVolumeController(t *testing.T) {
	testenv.RunSuite(t, "ephemeral-volume-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"ephemeral-volume-controller"})
})

func claimSpec(class string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: &class,
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
	}
}

// createPod creates a pod with a generic ephemeral volume "scratch" and a plain emptyDir.
func createPod(ctx context.Context, ns, name string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"type": "scratch"}, Annotations: map[string]string{"note": "from template"}},
						Spec:       claimSpec("fast"),
					},
				}}},
			},
		},
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
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

var _ = Describe("ephemeral-volume-controller", func() {
	It("creates the claim <pod>-<volume> from the template, controlled by the pod", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ephemeral")
		p := createPod(ctx, ns, "web")
		expectClaimOf(ctx, p)
		_, err := getClaim(ctx, ns, "web-cache")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no claim for the emptyDir volume")
	})

	It("creates the claim again when it is deleted while the pod lives", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ephemeral")
		p := createPod(ctx, ns, "db")
		first := expectClaimOf(ctx, p)
		Expect(env.Client.Delete(ctx, first)).To(Succeed())
		By("removing the protection finalizer (no pvc-protection-controller runs here)")
		Eventually(func() error {
			got, err := getClaim(ctx, ns, first.Name)
			if apierrors.IsNotFound(err) || err == nil && got.UID != first.UID {
				return nil
			}
			if err != nil {
				return err
			}
			got.Finalizers = nil
			return env.Client.Update(ctx, got)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, ns, first.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.UID).NotTo(Equal(first.UID))
		}).Should(Succeed())
		expectClaimOf(ctx, p)
	})

	It("leaves a same-named claim that the pod does not own untouched and says so in a Warning Event", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ephemeral")
		foreign := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-scratch", Labels: map[string]string{"owner": "someone-else"}},
			Spec:       claimSpec("slow"),
		}
		Expect(env.Client.Create(ctx, foreign)).To(Succeed())
		createPod(ctx, ns, "app")

		want := fmt.Sprintf("ephemeral volume scratch: PVC %s/app-scratch was not created for pod %s/app (pod is not owner)", ns, ns)
		Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Kind == "Pod" && e.Regarding.Name == "app" && e.Type == corev1.EventTypeWarning &&
					e.Reason == "FailedBinding" && e.Note == want
			})).To(BeTrue(), "events: %v", list.Items)
		}).Should(Succeed())

		Consistently(func(g Gomega) {
			got, err := getClaim(ctx, ns, "app-scratch")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.UID).To(Equal(foreign.UID))
			g.Expect(got.OwnerReferences).To(BeEmpty())
			g.Expect(got.Labels).To(Equal(map[string]string{"owner": "someone-else"}))
			g.Expect(got.Spec.StorageClassName).To(HaveValue(Equal("slow")))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("counts each claim create, and the refused ones, in upstream's metrics", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ephemeral")
		attempts, failures := creates(Default)
		lift := env.DenyCreates(ctx, ns, "persistentvolumeclaims", func() error {
			return env.Client.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}, Spec: claimSpec("fast")})
		})
		p := createPod(ctx, ns, "batch")

		By("the API server refusing the create: an attempt and a failure")
		Eventually(func(g Gomega) {
			a, f := creates(g)
			g.Expect(f).To(BeNumerically(">", failures))
			g.Expect(a).To(BeNumerically(">=", attempts+f-failures), "every failure was an attempt")
		}).Should(Succeed())

		By("the policy lifted: the retry creates the claim, an attempt that did not fail")
		lift()
		expectClaimOf(ctx, p)
		a, f := creates(Default)
		Expect(a - attempts).To(Equal(f - failures + 1))
	})
})
