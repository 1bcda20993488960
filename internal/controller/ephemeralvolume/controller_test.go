package ephemeralvolume_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcm/kcm/internal/testenv"
)

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
		env.ExpectEvent(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
			testenv.Event{Type: corev1.EventTypeWarning, Reason: "FailedBinding", Message: want})

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
		attempts, failures := creates()
		lift := env.DenyCreates(ctx, ns, "persistentvolumeclaims", func() error {
			return env.Client.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}, Spec: claimSpec("fast")})
		})
		p := createPod(ctx, ns, "batch")

		By("the API server refusing the create: an attempt and a failure")
		Eventually(func(g Gomega) {
			a, f := creates()
			g.Expect(f).To(BeNumerically(">", failures))
			g.Expect(a).To(BeNumerically(">=", attempts+f-failures), "every failure was an attempt")
		}).Should(Succeed())

		By("the policy lifted: the retry creates the claim, an attempt that did not fail")
		lift()
		expectClaimOf(ctx, p)
		a, f := creates()
		Expect(a - attempts).To(Equal(f - failures + 1))
	})
})
