package tokencleaner_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("token-cleaner-controller", func() {
	ctx := context.Background()

	// newSecret creates a Secret of typ in namespace shaped as a bootstrap token, expiring at
	// expiration unless it is empty, deleted after the spec if still there.
	newSecret := func(namespace string, typ corev1.SecretType, expiration string) *corev1.Secret {
		id := utilrand.String(6)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bootstrapapi.BootstrapTokenSecretPrefix + id},
			Type:       typ,
			StringData: map[string]string{
				bootstrapapi.BootstrapTokenIDKey:               id,
				bootstrapapi.BootstrapTokenSecretKey:           utilrand.String(16),
				bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			},
		}
		if expiration != "" {
			s.StringData[bootstrapapi.BootstrapTokenExpirationKey] = expiration
		}
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(Succeed()) })
		return s
	}
	newToken := func(expiration string) *corev1.Secret {
		return newSecret(metav1.NamespaceSystem, bootstrapapi.SecretTypeBootstrapToken, expiration)
	}
	exists := func(s *corev1.Secret) func() error {
		return func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}) }
	}
	gone := func(s *corev1.Secret) func(Gomega) {
		return func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret %s: %v", s.Name, err)
		}
	}

	It("deletes a token at its expiration, not before", func() {
		// Whole seconds, as the expiration is written: 4 to 5 s from now.
		expiration := time.Now().Add(5 * time.Second).Truncate(time.Second)
		tok := newToken(expiration.UTC().Format(time.RFC3339))

		// Seen by the controller at once (its creation is an event), yet still there until
		// just before it expires: nothing deletes it early. (The window only shrinks if
		// creating the token was slow.)
		Consistently(exists(tok), max(time.Until(expiration)-500*time.Millisecond, 100*time.Millisecond), 100*time.Millisecond).Should(Succeed())
		// Only the controller's own requeue at the expiration can delete it now: nothing
		// about the Secret changes any more.
		Eventually(gone(tok)).WithPolling(50 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("deleted %v after its expiration\n", time.Since(expiration))
	})

	It("deletes a token that has already expired, and leaves tokens not expired, Secrets of other types and other namespaces' tokens", func() {
		past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		later := newToken(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		never := newToken("")
		opaque := newSecret(metav1.NamespaceSystem, corev1.SecretTypeOpaque, past)
		elsewhere := newSecret(env.Namespace(ctx, "token-cleaner"), bootstrapapi.SecretTypeBootstrapToken, past)
		// Created last, the expired token is judged after the others (one worker, in order).
		expired := newToken(past)

		Eventually(gone(expired)).Should(Succeed())
		for _, s := range []*corev1.Secret{later, never, opaque, elsewhere} {
			Consistently(exists(s), 500*time.Millisecond).Should(Succeed(), "Secret %s/%s was deleted", s.Namespace, s.Name)
		}
	})

	It("follows a token's expiration as it changes", func() {
		tok := newToken(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		Consistently(exists(tok), time.Second).Should(Succeed())

		tok.StringData = map[string]string{bootstrapapi.BootstrapTokenExpirationKey: time.Now().Add(-time.Second).UTC().Format(time.RFC3339)}
		Expect(env.Client.Update(ctx, tok)).To(Succeed())
		Eventually(gone(tok)).Should(Succeed())
	})
})
