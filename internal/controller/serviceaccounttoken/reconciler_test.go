package serviceaccounttoken_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/serviceaccounttoken"
)

var _ = Describe("serviceaccount-token-controller", func() {
	ctx := context.Background()
	var ns string

	BeforeEach(func() { ns = env.Namespace(ctx, "sa-token") })

	newServiceAccount := func(name string, secrets ...string) *corev1.ServiceAccount {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for _, s := range secrets {
			sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: s})
		}
		Expect(env.Client.Create(ctx, sa)).To(Succeed())
		return sa
	}
	newToken := func(name, saName string, annotations map[string]string, data map[string][]byte) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: saName}},
			Type:       corev1.SecretTypeServiceAccountToken,
			Data:       data,
		}
		for k, v := range annotations {
			s.Annotations[k] = v
		}
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		return s
	}
	populated := func(s *corev1.Secret) func(Gomega) {
		return func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Data).To(HaveKey(corev1.ServiceAccountTokenKey))
		}
	}
	gone := func(obj client.Object) func() bool {
		return func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }
	}

	It("fills a token Secret with a token signed by the key, ca.crt, namespace and the ServiceAccount's UID", func() {
		sa := newServiceAccount("builder")
		s := newToken("builder-token", "builder", nil, nil)
		Eventually(populated(s)).Should(Succeed())

		Expect(s.Data[corev1.ServiceAccountRootCAKey]).To(Equal(env.Config.CAData))
		Expect(string(s.Data[corev1.ServiceAccountNamespaceKey])).To(Equal(ns))
		Expect(s.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountUIDKey, string(sa.UID)))

		parsed, err := jwt.ParseSigned(string(s.Data[corev1.ServiceAccountTokenKey]))
		Expect(err).NotTo(HaveOccurred())
		var public jwt.Claims
		var private serviceaccounttoken.LegacyClaims
		Expect(parsed.Claims(&key.PublicKey, &public, &private)).To(Succeed(), "the token verifies with the public key")
		Expect(public.Issuer).To(Equal("kubernetes/serviceaccount"))
		Expect(public.Subject).To(Equal("system:serviceaccount:" + ns + ":builder"))
		Expect(private).To(Equal(serviceaccounttoken.LegacyClaims{
			Namespace: ns, SecretName: "builder-token", ServiceAccountName: "builder", ServiceAccountUID: string(sa.UID),
		}))
	})

	It("keeps a token it did not write and replaces a stale ca.crt", func() {
		newServiceAccount("builder")
		s := newToken("builder-token", "builder", nil, map[string][]byte{
			corev1.ServiceAccountTokenKey: []byte("given"), corev1.ServiceAccountRootCAKey: []byte("old CA"),
		})
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Data[corev1.ServiceAccountRootCAKey]).To(Equal(env.Config.CAData))
		}).Should(Succeed())
		Expect(string(s.Data[corev1.ServiceAccountTokenKey])).To(Equal("given"))
		Expect(string(s.Data[corev1.ServiceAccountNamespaceKey])).To(Equal(ns))
	})

	It("deletes the tokens of a deleted ServiceAccount", func() {
		sa := newServiceAccount("builder")
		s := newToken("builder-token", "builder", nil, nil)
		Eventually(populated(s)).Should(Succeed())

		Expect(env.Client.Delete(ctx, sa)).To(Succeed())
		Eventually(gone(s)).Should(BeTrue())
	})

	It("deletes a token naming another UID of its ServiceAccount, and one naming no existing ServiceAccount", func() {
		sa := newServiceAccount("builder")
		mismatched := newToken("old-token", "builder", map[string]string{corev1.ServiceAccountUIDKey: "not-" + string(sa.UID)}, nil)
		orphan := newToken("orphan-token", "nobody", nil, nil)
		Eventually(gone(mismatched)).Should(BeTrue())
		Eventually(gone(orphan)).Should(BeTrue())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sa), sa)).To(Succeed())
	})

	It("removes a deleted token from its ServiceAccount's secrets", func() {
		sa := newServiceAccount("builder", "builder-token", "other")
		s := newToken("builder-token", "builder", nil, nil)
		Eventually(populated(s)).Should(Succeed())

		Expect(env.Client.Delete(ctx, s)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sa), sa)).To(Succeed())
			g.Expect(sa.Secrets).To(Equal([]corev1.ObjectReference{{Name: "other"}}))
		}).Should(Succeed())
	})

	It("signs tokens a real API server accepts, which then records their use", func() {
		// The suite's key is unknown to the API server; envtest's own signing key is not.
		apiKey := filepath.Join(env.Environment.ControlPlane.APIServer.CertDir, "sa-signer.key")
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager([]string{serviceaccounttoken.ControllerName}, "--service-account-private-key-file="+apiKey)).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			Expect(env.StartManager([]string{serviceaccounttoken.ControllerName}, keyFlag)).To(Succeed())
		})
		newServiceAccount("builder", "builder-token")
		s := newToken("builder-token", "builder", nil, nil)
		Eventually(populated(s)).Should(Succeed())

		cfg := rest.AnonymousClientConfig(env.Config)
		cfg.BearerToken = string(s.Data[corev1.ServiceAccountTokenKey])
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + ns + ":builder"))

		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Labels).To(HaveKeyWithValue("kubernetes.io/legacy-token-last-used", time.Now().UTC().Format("2006-01-02")))
		}).Should(Succeed())
	})

	It("refuses to start with a key file that is missing or holds no key", func() {
		Expect(env.StopManager()).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StartManager([]string{serviceaccounttoken.ControllerName}, keyFlag)).To(Succeed())
		})
		garbage := filepath.Join(GinkgoT().TempDir(), "garbage.key")
		Expect(os.WriteFile(garbage, []byte("not a key"), 0o600)).To(Succeed())
		for _, path := range []string{garbage, filepath.Join(GinkgoT().TempDir(), "missing.key")} {
			err := env.StartManager([]string{serviceaccounttoken.ControllerName}, "--service-account-private-key-file="+path)
			Expect(err).To(MatchError(ContainSubstring("--service-account-private-key-file")))
			Expect(err).To(MatchError(ContainSubstring(serviceaccounttoken.ControllerName)))
		}
	})

	It("does not run without --service-account-private-key-file", func() {
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager([]string{serviceaccounttoken.ControllerName})).To(Succeed())
		newServiceAccount("builder")
		s := newToken("builder-token", "builder", nil, nil)
		Consistently(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Data).To(BeEmpty())
		}, 3*time.Second).Should(Succeed())

		// With the key again, the same Secret is filled: it was the key that was missing.
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager([]string{serviceaccounttoken.ControllerName}, keyFlag)).To(Succeed())
		Eventually(populated(s)).Should(Succeed())
	})
})
