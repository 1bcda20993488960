package bootstrapsigner_test

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
	"k8s.io/cluster-bootstrap/token/jws"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("bootstrap-signer-controller", func() {
	ctx := context.Background()
	clusterInfo := client.ObjectKey{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo}
	kubeconfig := func(server string) string {
		return "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: " + server + "\n  name: \"\"\n"
	}

	// cluster-info exists in every spec with a kubeconfig naming a server of its own.
	var content string
	BeforeEach(func() {
		content = kubeconfig("https://" + utilrand.String(8) + ":6443")
		cm := &corev1.ConfigMap{}
		err := env.Client.Get(ctx, clusterInfo, cm)
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterInfo.Namespace, Name: clusterInfo.Name},
				Data: map[string]string{bootstrapapi.KubeConfigKey: content}}
			Expect(env.Client.Create(ctx, cm)).To(Succeed())
			return
		}
		Expect(err).NotTo(HaveOccurred())
		cm.Data[bootstrapapi.KubeConfigKey] = content
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
	})

	// newToken creates a bootstrap token Secret as kubeadm does, with signing usage unless
	// signing is false, deleted after the spec.
	newToken := func(signing bool) *corev1.Secret {
		id := utilrand.String(6)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bootstrapapi.BootstrapTokenSecretPrefix + id},
			Type:       bootstrapapi.SecretTypeBootstrapToken,
			StringData: map[string]string{
				bootstrapapi.BootstrapTokenIDKey:     id,
				bootstrapapi.BootstrapTokenSecretKey: utilrand.String(16),
			},
		}
		if signing {
			s.StringData[bootstrapapi.BootstrapTokenUsageSigningKey] = "true"
		}
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(Succeed()) })
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
		return s
	}
	id := func(s *corev1.Secret) string { return string(s.Data[bootstrapapi.BootstrapTokenIDKey]) }
	// signature reads cluster-info's signature for s's token, and whether there is one.
	signature := func(g Gomega, s *corev1.Secret) (string, string, bool) {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, clusterInfo, cm)).To(Succeed())
		sig, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id(s)]
		return cm.Data[bootstrapapi.KubeConfigKey], sig, ok
	}
	// signedWith: cluster-info carries a signature of its kubeconfig that verifies with the
	// token id and secret, as kubeadm join checks it.
	signedWith := func(s *corev1.Secret, secret string) func(Gomega) {
		return func(g Gomega) {
			kc, sig, ok := signature(g, s)
			g.Expect(ok).To(BeTrue(), "no signature for token %s", id(s))
			g.Expect(jws.DetachedTokenIsValid(sig, kc, id(s), secret)).To(BeTrue(), "the signature does not verify with the token")
		}
	}
	notSigned := func(s *corev1.Secret) func(Gomega) {
		return func(g Gomega) {
			_, _, ok := signature(g, s)
			g.Expect(ok).To(BeFalse(), "cluster-info still has a signature for token %s", id(s))
		}
	}
	secretOf := func(s *corev1.Secret) string { return string(s.Data[bootstrapapi.BootstrapTokenSecretKey]) }

	It("signs cluster-info with a signing token, re-signs as the token and the kubeconfig change, and drops the signature when the token goes", func() {
		tok := newToken(true)
		Eventually(signedWith(tok, secretOf(tok))).Should(Succeed())

		tok.Data[bootstrapapi.BootstrapTokenSecretKey] = []byte(utilrand.String(16))
		Expect(env.Client.Update(ctx, tok)).To(Succeed())
		Eventually(signedWith(tok, secretOf(tok))).Should(Succeed())

		cm := &corev1.ConfigMap{}
		Expect(env.Client.Get(ctx, clusterInfo, cm)).To(Succeed())
		cm.Data[bootstrapapi.KubeConfigKey] = kubeconfig("https://moved:6443")
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			kc, _, _ := signature(g, tok)
			g.Expect(kc).To(Equal(kubeconfig("https://moved:6443")))
			signedWith(tok, secretOf(tok))(g)
		}).Should(Succeed())

		Expect(env.Client.Delete(ctx, tok)).To(Succeed())
		Eventually(notSigned(tok)).Should(Succeed())
	})

	It("drops the signature of a token once it is updated to an expiration passed", func() {
		tok := newToken(true)
		Eventually(signedWith(tok, secretOf(tok))).Should(Succeed())

		tok.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
		Expect(env.Client.Update(ctx, tok)).To(Succeed())
		Eventually(notSigned(tok)).Should(Succeed())
	})

	It("does not sign with a token without signing usage", func() {
		plain := newToken(false)
		// Created after the plain token, the signing one is signed by a sync that saw both.
		witness := newToken(true)
		Eventually(signedWith(witness, secretOf(witness))).Should(Succeed())
		Consistently(notSigned(plain), time.Second).Should(Succeed())
	})
})
