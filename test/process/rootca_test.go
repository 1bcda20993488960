//go:build linux

package process_test

import (
	"context"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("Without a root CA", func() {
	It("runs every controller with an insecure-skip-tls-verify kubeconfig and no --root-ca-file, publishing an empty ca.crt as upstream, with a warning", func() {
		// The suite's administrator kubeconfig, trusting the API server without naming its CA:
		// a common development setup, where upstream publishes the CA data it has (none).
		conf, err := clientcmd.Load(env.Environment.KubeConfig)
		Expect(err).NotTo(HaveOccurred())
		for _, cluster := range conf.Clusters {
			cluster.CertificateAuthorityData, cluster.CertificateAuthority = nil, ""
			cluster.InsecureSkipTLSVerify = true
		}
		insecure := filepath.Join(GinkgoT().TempDir(), "insecure.kubeconfig")
		Expect(clientcmd.WriteToFile(*conf, insecure)).To(Succeed())
		// The tokens controller takes the root CA too: with the API server's service
		// account key it runs.
		saKey := filepath.Join(env.Environment.ControlPlane.GetAPIServer().CertDir, "sa-signer.key")

		p := startKCM("kcm", "--leader-elect=false", "--kubeconfig="+insecure, "--service-account-private-key-file="+saKey)
		Eventually(p.Count("Controllers set up")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", p.State())
		Expect(p.Lines("No root CA to publish")).To(HaveLen(1), "the warning, once")
		Expect(logField(p.Lines("Controllers set up")[0], "controllers")).To(ContainElements(
			"root-ca-certificate-publisher-controller", "serviceaccount-token-controller", "serviceaccount-controller"))

		ns := newNamespace(env.Client)
		By("the other controllers work: the namespace gets its default ServiceAccount")
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		By("kube-root-ca.crt is published with the CA data kcm has: none")
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: rootCAConfigMap}, cm)).To(Succeed())
			g.Expect(cm.Data).To(Equal(map[string]string{rootCAKey: ""}))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		By("a legacy token Secret gets its token, and no ca.crt")
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-token",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: defaultSA}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		Expect(env.Client.Create(context.Background(), secret)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.Secret{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(secret), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKey(corev1.ServiceAccountTokenKey))
			g.Expect(got.Data).NotTo(HaveKey(corev1.ServiceAccountRootCAKey))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())
	})
})
