package legacytokencleaner_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/legacytokencleaner"
)

var _ = Describe("legacy-serviceaccount-token-cleaner-controller", func() {
	ctx := context.Background()
	var ns string
	today := func() string { return time.Now().UTC().Format("2006-01-02") }
	yesterday := func() string { return time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02") }

	BeforeEach(func() { ns = env.Namespace(ctx, "legacy-token") })

	// newNamedToken makes a token as the API server used to, name-token of the
	// ServiceAccount name: listed in its ServiceAccount's secrets (unless listed is false),
	// with the given labels.
	newNamedToken := func(name string, listed bool, labels map[string]string) *corev1.Secret {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if listed {
			sa.Secrets = []corev1.ObjectReference{{Name: name + "-token"}}
		}
		Expect(env.Client.Create(ctx, sa)).To(Succeed())
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-token", Labels: labels, Annotations: map[string]string{
				corev1.ServiceAccountNameKey: sa.Name, corev1.ServiceAccountUIDKey: string(sa.UID),
			}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		return s
	}
	newToken := func(listed bool, labels map[string]string) *corev1.Secret {
		return newNamedToken("builder", listed, labels)
	}
	labels := func(s *corev1.Secret) func(Gomega) map[string]string {
		return func(g Gomega) map[string]string {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			return s.Labels
		}
	}
	// cleanerActed is the witness of a kept token's spec: an unused token made after it is
	// marked, so a sync judged the kept token too, when it was as old as the witness.
	cleanerActed := func() {
		GinkgoHelper()
		witness := newNamedToken("witness", true, nil)
		Eventually(labels(witness)).Should(HaveKeyWithValue(legacytokencleaner.InvalidSinceLabel, today()))
	}
	stillUnmarked := func(s *corev1.Secret) {
		GinkgoHelper()
		cleanerActed()
		// Several more syncs after the token became old enough.
		Consistently(labels(s), 3*period).ShouldNot(HaveKey(legacytokencleaner.InvalidSinceLabel))
	}

	It("marks an unused token invalid since today, then deletes it once invalid for a period", func() {
		s := newToken(true, nil)
		Eventually(labels(s)).Should(HaveKeyWithValue(legacytokencleaner.InvalidSinceLabel, today()))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
		Expect(s.DeletionTimestamp).To(BeNil())

		// A day later the token has been invalid for longer than the (short) period.
		patch := client.MergeFrom(s.DeepCopy())
		s.Labels[legacytokencleaner.InvalidSinceLabel] = yesterday()
		Expect(env.Client.Patch(ctx, s, patch)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s))
		}).Should(BeTrue())
	})

	It("keeps a token used within the period", func() {
		s := newToken(true, map[string]string{legacytokencleaner.LastUsedLabel: today()})
		stillUnmarked(s)
	})

	It("keeps a token a pod refers to", func() {
		s := newToken(true, nil)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app", Env: []corev1.EnvVar{{
				Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: "token",
				}},
			}}}}},
		}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		stillUnmarked(s)

		// Once no pod refers to it, it is marked.
		Expect(env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(labels(s)).Should(HaveKeyWithValue(legacytokencleaner.InvalidSinceLabel, today()))
	})

	It("keeps a token its ServiceAccount does not list (not auto-generated)", func() {
		s := newToken(false, nil)
		stillUnmarked(s)
	})

	It("keeps a token marked invalid long ago but used again, leaving the label to whoever removes it", func() {
		s := newToken(true, map[string]string{
			legacytokencleaner.InvalidSinceLabel: "2020-01-01",
			legacytokencleaner.LastUsedLabel:     today(),
		})
		cleanerActed()
		Consistently(labels(s), 3*period).Should(HaveKeyWithValue(legacytokencleaner.InvalidSinceLabel, "2020-01-01"))
	})
})
