//go:build linux

package process_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A kubeadm static pod's command line", func() {
	It("starts, runs the controllers, and names once the flags kcm does not act on", func() {
		// What kubeadm v1.37 writes into /etc/kubernetes/manifests/kube-controller-manager.yaml,
		// with files of the same kinds (pki/ca.crt, ca.key, front-proxy-ca.crt, sa.key).
		dir := GinkgoT().TempDir()
		caCert, caKey := writeCA(dir, "ca")
		frontProxyCA, _ := writeCA(dir, "front-proxy-ca")
		saKey := filepath.Join(dir, "sa.key")
		writeRSAKey(saKey)
		// kube-root-ca.crt publishes the CA the cluster's API server is served with.
		rootCA := filepath.Join(dir, "root-ca.crt")
		Expect(os.WriteFile(rootCA, env.Config.CAData, 0o600)).To(Succeed())
		lease := uniqueLeaseName()

		p := startKCM("kcm",
			"--allocate-node-cidrs=true",
			"--authentication-kubeconfig="+kubeconfig,
			"--authorization-kubeconfig="+kubeconfig,
			"--bind-address=127.0.0.1",
			"--client-ca-file="+caCert,
			"--cluster-cidr=10.244.0.0/16",
			"--cluster-name=kubernetes",
			"--cluster-signing-cert-file="+caCert,
			"--cluster-signing-key-file="+caKey,
			"--controllers=*,bootstrapsigner,tokencleaner",
			"--kubeconfig="+kubeconfig,
			"--leader-elect=true",
			"--requestheader-client-ca-file="+frontProxyCA,
			"--root-ca-file="+rootCA,
			"--service-account-private-key-file="+saKey,
			"--service-cluster-ip-range=10.96.0.0/12",
			"--use-service-account-credentials=true",
			// Not kubeadm's: no port clash with other specs, and a Lease of this spec's own.
			"--secure-port=0",
			"--leader-elect-resource-name="+lease,
		)

		Eventually(p.Count("Successfully acquired lease")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", p.State())
		Eventually(holder(env.Client, lease)).WithTimeout(10 * time.Second).Should(MatchRegexp(identityPattern()))
		ns := newNamespace(env.Client)
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(rootCAData(env.Client, ns)).WithTimeout(30 * time.Second).Should(Equal(string(env.Config.CAData)))
		Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())

		ignoredLines := p.Lines("Flags given that kcm does not act on")
		Expect(ignoredLines).To(HaveLen(1), "the flags kcm does not act on are logged once")
		ignored := logField(ignoredLines[0], "flags")
		GinkgoWriter.Printf("flags kcm does not act on: %v\n", ignored)
		Expect(ignored).To(ContainElements("--allocate-node-cidrs", "--use-service-account-credentials"))
		// Only flags given are reported, and none that kcm acts on.
		Expect(ignored).To(HaveEach(BeElementOf(
			"--allocate-node-cidrs", "--authentication-kubeconfig", "--authorization-kubeconfig",
			"--client-ca-file", "--cluster-cidr", "--cluster-name", "--cluster-signing-cert-file",
			"--cluster-signing-key-file", "--requestheader-client-ca-file",
			"--service-account-private-key-file", "--service-cluster-ip-range",
			"--use-service-account-credentials",
		)))

		// bootstrapsigner and tokencleaner are off by default; named, they are enabled, and
		// reported as not built yet.
		expected := notBuiltAmong("bootstrap-signer-controller", "token-cleaner-controller")
		notBuilt := p.Lines("does not implement yet")
		if len(expected) == 0 {
			Expect(notBuilt).To(BeEmpty())
		} else {
			Expect(notBuilt).To(HaveLen(1))
			Expect(logField(notBuilt[0], "controllers")).To(ConsistOf(expected))
		}
	})
})
