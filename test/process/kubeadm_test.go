//go:build linux

package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("A kubeadm static pod's command line", func() {
	It("starts as system:kube-controller-manager, runs the controllers with no Forbidden, and names once the flags kcm does not act on", func() {
		// What kubeadm v1.37 writes into /etc/kubernetes/manifests/kube-controller-manager.yaml,
		// with the files the suite's API server has in place of kubeadm's, and kubeadm's
		// identity: controller-manager.conf authenticates the user
		// system:kube-controller-manager by client certificate, whose bootstrap role only
		// reads; with --use-service-account-credentials each controller writes as its own
		// ServiceAccount under the API server's own system:controller:<name> role.
		dir := GinkgoT().TempDir()
		certDir := env.Environment.ControlPlane.GetAPIServer().CertDir
		// envtest's names for the API server's --client-ca-file and its service account
		// signing key (kubeadm's ca.crt and sa.key): the API server trusts both.
		clientCA := filepath.Join(certDir, "client-cert-auth-ca.crt")
		saKey := filepath.Join(certDir, "sa-signer.key")
		// kubeadm signs with ca.key; envtest keeps its client CA's key in memory.
		signingCert, signingKey := writeCA(dir, "cluster-signing-ca")
		frontProxyCA, _ := writeCA(dir, "front-proxy-ca")
		// kube-root-ca.crt publishes the CA the cluster's API server is served with.
		rootCA := filepath.Join(dir, "ca.crt")
		Expect(os.WriteFile(rootCA, env.Config.CAData, 0o600)).To(Succeed())
		user, err := env.Environment.AddUser(envtest.User{Name: testenv.KubeadmUser}, env.Config)
		Expect(err).NotTo(HaveOccurred())
		conf, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		controllerManagerConf := filepath.Join(dir, "controller-manager.conf")
		Expect(os.WriteFile(controllerManagerConf, conf, 0o600)).To(Succeed())
		lease := uniqueLeaseName()

		p := startKCM("kcm",
			"--allocate-node-cidrs=true",
			"--authentication-kubeconfig="+controllerManagerConf,
			"--authorization-kubeconfig="+controllerManagerConf,
			"--bind-address=127.0.0.1",
			"--client-ca-file="+clientCA,
			"--cluster-cidr=10.244.0.0/16",
			"--cluster-name=kubernetes",
			"--cluster-signing-cert-file="+signingCert,
			"--cluster-signing-key-file="+signingKey,
			"--controllers=*,bootstrapsigner,tokencleaner",
			"--kubeconfig="+controllerManagerConf,
			"--leader-elect=true",
			"--requestheader-client-ca-file="+frontProxyCA,
			"--root-ca-file="+rootCA,
			"--service-account-private-key-file="+saKey,
			"--service-cluster-ip-range=10.96.0.0/12",
			"--use-service-account-credentials=true",
			// Not kubeadm's: no port clash with other specs, and a Lease of this spec's own.
			"--secure-port=0",
			// Not kubeadm's either: a flag upstream accepts that no kcm controller acts on, so
			// that the report of such flags is seen (kcm acts on every flag kubeadm gives).
			"--min-resync-period=12h",
			"--leader-elect-resource-name="+lease,
		)

		Eventually(p.Count("Successfully acquired lease")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", p.State())
		Eventually(holder(env.Client, lease)).WithTimeout(10 * time.Second).Should(MatchRegexp(identityPattern()))
		ns := newNamespace(env.Client)
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(rootCAData(env.Client, ns)).WithTimeout(30 * time.Second).Should(Equal(string(env.Config.CAData)))

		// The workload controllers write under their own roles: a Deployment gets its
		// ReplicaSet, the ReplicaSet its Pods (created; no scheduler is needed for that).
		deployment := newDeployment(ns, "kubeadm", 2)
		Expect(env.Client.Create(context.Background(), deployment)).To(Succeed())
		Eventually(func(g Gomega) {
			sets := &appsv1.ReplicaSetList{}
			g.Expect(env.Client.List(context.Background(), sets, client.InNamespace(ns))).To(Succeed())
			g.Expect(sets.Items).To(HaveLen(1), "the Deployment's ReplicaSet")
			g.Expect(metav1.IsControlledBy(&sets.Items[0], deployment)).To(BeTrue(), "owned by the Deployment")
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2), "the ReplicaSet's Pods")
			for i := range pods.Items {
				g.Expect(metav1.IsControlledBy(&pods.Items[i], &sets.Items[0])).To(BeTrue(), "pod %s owned by the ReplicaSet", pods.Items[i].Name)
			}
			got := &appsv1.Deployment{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(deployment), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "the Deployment's status written")
			g.Expect(got.Status.Replicas).To(BeEquivalentTo(2), "status.replicas")
		}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "kcm: %s", p.State())
		Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())
		forbidden := forbiddenLines(p)
		Expect(forbidden).To(BeEmpty(), "%d lines of kcm's log say forbidden:\n%s",
			len(forbidden), strings.Join(forbidden[:min(len(forbidden), 20)], "\n"))

		ignoredLines := p.Lines("Flags given that kcm does not act on")
		Expect(ignoredLines).To(HaveLen(1), "the flags kcm does not act on are logged once")
		ignored := logField(ignoredLines[0], "flags")
		GinkgoWriter.Printf("flags kcm does not act on: %v\n", ignored)
		// --cluster-name is read only by the cloud loops (service-lb, node-route), which
		// without --cloud-provider decide not to run: as every skipped controller's flags, it
		// counts as acted on.
		// The secure port's authentication and authorization flags are k8s.io/apiserver's own.
		Expect(ignored).To(ConsistOf("--min-resync-period"), "of kubeadm's flags, none")
		// With kubeadm's flags every controller it needs runs: none is named as off.
		Expect(p.Lines("Controllers that do not run for want of a flag")).To(BeEmpty())
		Expect(p.Lines("Controllers set up")).To(HaveLen(1))

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
