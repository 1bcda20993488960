//go:build e2e && linux

package e2e_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/test/cluster"
)

// kubeadm's names (cmd/kubeadm/app/constants and phases/bootstraptoken) for what `kubeadm init`
// sets up so that nodes can join with a bootstrap token.
const (
	nodeTokenGroup     = "system:bootstrappers:kubeadm:default-node-token"
	clusterInfoRole    = "kubeadm:bootstrap-signer-clusterinfo"
	kubeletSignerName  = certificatesv1.KubeAPIServerClientKubeletSignerName
	kubeadmClusterCIDR = "10.244.0.0/16" // KubeadmArgs' --cluster-cidr
)

// The seven things a kubeadm cluster needs of its controller manager on day 0, with kcm started
// exactly as each route we ship for kubeadm clusters starts it: the command line of
// config/kubeadm's static pod, and that of config/control-plane's Deployment, each on this
// cluster's copy of a control-plane node's /etc/kubernetes (cluster.PodArgs: every file a flag
// names must come from one of the pod's hostPath mounts) and under kubeadm's identity,
// controller-manager.conf's system:kube-controller-manager. Only the secure port differs.
var _ = Describe("kcm started from config/kubeadm's static pod", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		pod, err := cluster.ReadPod(filepath.Join(root, cluster.StaticPodManifest))
		Expect(err).NotTo(HaveOccurred())
		args, err := local.PodArgs(&pod.Spec, "kube-controller-manager")
		Expect(err).NotTo(HaveOccurred())
		restartKCMWith(ctx, append(args, fmt.Sprintf("--secure-port=%d", freePort())))
	})
	dayZeroSpecs()
})

var _ = Describe("kcm started from config/control-plane's Deployment", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		dep, err := cluster.RenderDeployment(kubectl, filepath.Join(root, "config/control-plane"))
		Expect(err).NotTo(HaveOccurred())
		args, err := local.PodArgs(&dep.Spec.Template.Spec, "kcm")
		Expect(err).NotTo(HaveOccurred())
		restartKCMWith(ctx, append(args, fmt.Sprintf("--secure-port=%d", freePort())))
	})
	dayZeroSpecs()
})

// dayZeroSpecs checks the suite's kcm for what `kubeadm init` and `kubeadm join` need, with the
// public API only: a new namespace's ServiceAccount and CA, a Deployment's pods, then "kubeadm
// join" played step by step: what kubeadm init creates, a bootstrap token, its JWS in
// cluster-info (bootstrap-signer), the kubelet's client CSR approved (csr-approving) and
// signed (csr-signing) by the CA the API server trusts, the node registering with that
// certificate and getting a pod CIDR (node-ipam), and the expired token deleted
// (token-cleaner) with its JWS. Each step is an It, so a failure names the controller. The
// seventh need, aggregated ClusterRoles, is the spec after.
func dayZeroSpecs() {
	var (
		tokenID, tokenSecret string
		expiration           time.Time
		nodeName             string
		certPEM, keyPEM      []byte
	)

	BeforeAll(func(ctx SpecContext) {
		kubeadmInit(ctx)
		token, err := bootstraputil.GenerateBootstrapToken()
		Expect(err).NotTo(HaveOccurred())
		tokenID, tokenSecret, _ = strings.Cut(token, ".")
		nodeName = "joined-" + tokenID
	})

	It("gives a new namespace its default ServiceAccount and the cluster CA, and a Deployment its pods", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// kubeadm's ca.crt, which --root-ca-file names: the CA that signs the API server's
		// serving certificate.
		ca, err := os.ReadFile(local.NodePath("/etc/kubernetes/pki/ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})).To(Succeed())
			root := &corev1.ConfigMap{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kube-root-ca.crt"}, root)).To(Succeed())
			g.Expect(root.Data).To(HaveKeyWithValue("ca.crt", string(ca)))
		}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		Expect(cl.Create(ctx, newDeployment(ns, "day-zero", 2))).To(Succeed())
		waitDeploymentComplete(ctx, ns, "day-zero", 2)
	})

	It("signs cluster-info for a new bootstrap token with a JWS that verifies with the token", func(ctx SpecContext) {
		// kubeadm's token: 24 h by default; here a little past the steps that use it, so that
		// the last step sees token-cleaner delete it.
		expiration = time.Now().Add(20 * time.Second).UTC().Truncate(time.Second)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(tokenID)},
			Type:       bootstrapapi.SecretTypeBootstrapToken,
			StringData: map[string]string{
				bootstrapapi.BootstrapTokenIDKey:               tokenID,
				bootstrapapi.BootstrapTokenSecretKey:           tokenSecret,
				bootstrapapi.BootstrapTokenExpirationKey:       expiration.Format(time.RFC3339),
				bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
				bootstrapapi.BootstrapTokenUsageAuthentication: "true",
				bootstrapapi.BootstrapTokenExtraGroupsKey:      nodeTokenGroup,
			},
		}
		Expect(cl.Create(ctx, secret)).To(Succeed())

		// kubeadm join's discovery: cluster-info read anonymously, trusted once its JWS for the
		// token verifies.
		anonymous := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(local.Config))
		Eventually(ctx, func(g Gomega) {
			info, err := anonymous.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			sig, ok := info.Data[bootstrapapi.JWSSignatureKeyPrefix+tokenID]
			g.Expect(ok).To(BeTrue(), "cluster-info's %s", bootstrapapi.JWSSignatureKeyPrefix+tokenID)
			content := info.Data[bootstrapapi.KubeConfigKey]
			g.Expect(jws.DetachedTokenIsValid(sig, content, tokenID, tokenSecret)).To(BeTrue(), "JWS %q verifies with the token", sig)
			g.Expect(jws.DetachedTokenIsValid(sig, content, tokenID, strings.Repeat("0", 16))).To(BeFalse(), "JWS verifies with another secret")
		}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
	})

	It("approves and issues the kubelet's client certificate requested as the bootstrap token's user", func(ctx SpecContext) {
		bootstrap := rest.AnonymousClientConfig(local.Config)
		bootstrap.BearerToken = bootstraputil.TokenFromIDAndSecret(tokenID, tokenSecret)
		bootstrapClient := kubernetes.NewForConfigOrDie(bootstrap)
		expectIdentity(ctx, bootstrapClient, bootstrapapi.BootstrapUserPrefix+tokenID, bootstrapapi.BootstrapDefaultGroup, nodeTokenGroup)

		// The kubelet's request (pkg/kubelet/certificate/bootstrap): an ECDSA P-256 key, the
		// node's name in system:nodes, digital signature and client auth.
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
		Expect(err).NotTo(HaveOccurred())
		request, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		csr := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    request,
				SignerName: kubeletSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			},
		}
		created := time.Now()
		csr, err = bootstrapClient.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(cl.Delete(ctx, csr))).To(Succeed())
		})
		Expect(csr.Spec.Username).To(Equal(bootstrapapi.BootstrapUserPrefix + tokenID))

		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(csr), csr)).To(Succeed())
			g.Expect(csr.Status.Certificate).NotTo(BeEmpty(), "certificate issued; conditions %v", csr.Status.Conditions)
		}).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		issued := time.Since(created)
		AddReportEntry("CSR creation to issued certificate", issued.String())
		GinkgoWriter.Printf("CSR %s: created to issued certificate in %s\n", csr.Name, issued)

		Expect(csr.Status.Conditions).To(ContainElement(And(
			HaveField("Type", certificatesv1.CertificateApproved),
			HaveField("Status", corev1.ConditionTrue),
			HaveField("Reason", "AutoApproved"),
		)))
		certPEM = csr.Status.Certificate
	})

	It("authenticates the certificate as the node", func(ctx SpecContext) {
		Expect(certPEM).NotTo(BeEmpty(), "the certificate of the previous step")
		expectIdentity(ctx, nodeClient(certPEM, keyPEM), "system:node:"+nodeName, "system:nodes")
	})

	It("gives the node that registered with that identity a pod CIDR inside --cluster-cidr", func(ctx SpecContext) {
		Expect(certPEM).NotTo(BeEmpty(), "the certificate of the previous step")
		// The kubelet registers its own Node (the Node authorizer and NodeRestriction allow
		// just that one); the suite's kwok plays that kubelet from then on.
		node, err := nodeClient(certPEM, keyPEM).CoreV1().Nodes().Create(ctx, cluster.NewNode(nodeName, cluster.NodesValue), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(cl.Delete(ctx, node))).To(Succeed())
		})
		_, clusterCIDR, err := net.ParseCIDR(kubeadmClusterCIDR)
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
			g.Expect(node.Spec.PodCIDR).NotTo(BeEmpty(), "spec.podCIDR")
			g.Expect(node.Spec.PodCIDRs).To(Equal([]string{node.Spec.PodCIDR}), "spec.podCIDRs")
		}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		ip, podCIDR, err := net.ParseCIDR(node.Spec.PodCIDR)
		Expect(err).NotTo(HaveOccurred())
		ones, _ := podCIDR.Mask.Size()
		Expect(clusterCIDR.Contains(ip)).To(BeTrue(), "pod CIDR %s inside %s", podCIDR, clusterCIDR)
		Expect(ones).To(Equal(24), "kubeadm's IPv4 --node-cidr-mask-size default")
	})

	It("deletes the token once expired, and its JWS from cluster-info", func(ctx SpecContext) {
		key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(tokenID)}
		Expect(cl.Get(ctx, key, &corev1.Secret{})).To(Succeed(), "token Secret before its expiry at %s", expiration)
		Eventually(ctx, func(g Gomega) {
			err := cl.Get(ctx, key, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "token Secret deleted (expired at %s): %v", expiration, err)
			info := &corev1.ConfigMap{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo}, info)).To(Succeed())
			g.Expect(info.Data).NotTo(HaveKey(bootstrapapi.JWSSignatureKeyPrefix+tokenID), "JWS removed")
			g.Expect(info.Data).To(HaveKey(bootstrapapi.KubeConfigKey))
		}).WithTimeout(time.Until(expiration)+30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		GinkgoWriter.Printf("token %s deleted %s after its expiry\n", tokenID, time.Since(expiration).Round(time.Millisecond))
		Expect(time.Now()).To(BeTemporally(">=", expiration), "not deleted before its expiry")
	})
}

// A user bound to the aggregated ClusterRole edit in a namespace can create a Deployment there:
// edit is empty until clusterrole-aggregation fills it, and grants nothing then.
var _ = It("lets a user bound to the edit ClusterRole in a namespace create a Deployment", func(ctx SpecContext) {
	ns := newNamespace(ctx)
	edit := &rbacv1.ClusterRole{}
	Expect(cl.Get(ctx, client.ObjectKey{Name: "edit"}, edit)).To(Succeed())
	Expect(edit.AggregationRule).NotTo(BeNil(), "edit is aggregated")
	Eventually(ctx, func(g Gomega) {
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(edit), edit)).To(Succeed())
		g.Expect(edit.Rules).To(ContainElement(And(
			HaveField("APIGroups", ContainElement("apps")),
			HaveField("Resources", ContainElement("deployments")),
			HaveField("Verbs", ContainElement("create")),
		)), "edit's rules: %v", edit.Rules)
	}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "logs in %s", logDir)

	Expect(cl.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jane-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "jane"}},
	})).To(Succeed())
	// jane's requests, authorized as jane: the administrator impersonates her.
	janeConfig := rest.CopyConfig(local.Config)
	janeConfig.Impersonate = rest.ImpersonationConfig{UserName: "jane"}
	jane, err := client.New(janeConfig, client.Options{Scheme: cl.Scheme(), Mapper: cl.RESTMapper()})
	Expect(err).NotTo(HaveOccurred())

	// The API server's RBAC authorizer sees the new RoleBinding through its informer, soon.
	Eventually(ctx, func() error {
		return jane.Create(ctx, newDeployment(ns, "janes", 1))
	}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "jane creates a Deployment in %s", ns)
	// edit grants no RBAC: jane is not an administrator.
	err = jane.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jane-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "jane"}},
	})
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "jane binding herself to admin: %v", err)
	// Another namespace is not hers.
	Expect(apierrors.IsForbidden(jane.Create(ctx, newDeployment(metav1.NamespaceDefault, "janes", 1)))).To(BeTrue())
	waitDeploymentComplete(ctx, ns, "janes", 1)
	Expect(jane.Get(ctx, client.ObjectKey{Namespace: ns, Name: "janes"}, &appsv1.Deployment{})).To(Succeed())
})

// kubeadmInit creates what `kubeadm init` creates for joining nodes (phases bootstraptoken,
// clusterinfo): cluster-info in kube-public with a kubeconfig naming the API server and its CA,
// readable by anyone; the bindings that let bootstrap tokens of kubeadm's group post CSRs and
// get them approved, and nodes renew their own client certificates.
func kubeadmInit(ctx context.Context) {
	GinkgoHelper()
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{
		"": {Server: local.Config.Host, CertificateAuthorityData: local.Config.CAData},
	}})
	Expect(err).NotTo(HaveOccurred())
	group := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}}
	}
	clusterRoleBinding := func(name, role string, subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
	}
	objects := []client.Object{
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo},
			Data:       map[string]string{bootstrapapi.KubeConfigKey: string(kubeconfig)},
		},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespacePublic, Name: clusterInfoRole},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{bootstrapapi.ConfigMapClusterInfo}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespacePublic, Name: clusterInfoRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: clusterInfoRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:anonymous"}},
		},
		clusterRoleBinding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group(nodeTokenGroup)),
		clusterRoleBinding("kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group(nodeTokenGroup)),
		clusterRoleBinding("kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", group("system:nodes")),
	}
	for _, obj := range objects {
		if err := cl.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred(), "creating %T %s", obj, obj.GetName())
		}
	}
}

// nodeClient is a client authenticated by the node's client certificate.
func nodeClient(certPEM, keyPEM []byte) kubernetes.Interface {
	GinkgoHelper()
	config := rest.AnonymousClientConfig(local.Config)
	config.CertData, config.KeyData = certPEM, keyPEM
	cs, err := kubernetes.NewForConfig(config)
	Expect(err).NotTo(HaveOccurred())
	return cs
}

// expectIdentity expects the API server to see the client as user, in groups.
func expectIdentity(ctx context.Context, cs kubernetes.Interface, user string, groups ...string) {
	GinkgoHelper()
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "authenticating as %s", user)
	Expect(review.Status.UserInfo.Username).To(Equal(user))
	Expect(review.Status.UserInfo.Groups).To(ContainElements(groups), fmt.Sprintf("%s's groups", user))
}
