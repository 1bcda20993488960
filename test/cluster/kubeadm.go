//go:build linux

package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControllerManagerUser is the identity kubeadm's controller-manager.conf gives
// kube-controller-manager; the API server's bootstrap RBAC binds it to the ClusterRole
// system:kube-controller-manager.
const ControllerManagerUser = "system:kube-controller-manager"

// ServiceClusterIPRange is the API server's Service range, which the controller managers are
// told too (kubeadm passes its own to both).
const ServiceClusterIPRange = "10.0.0.0/24"

// PKI are the files a kubeadm control plane keeps under /etc/kubernetes/pki that its
// kube-controller-manager static pod names, as this cluster has them (under <Dir>/pki).
type PKI struct {
	// CA is the CA the API server's serving certificate is signed by (kubeadm's ca.crt as
	// --root-ca-file): what pods trust, published as kube-root-ca.crt.
	CA string
	// ClientCA is the CA the API server verifies client certificates with (kubeadm's ca.crt
	// as --client-ca-file): SigningCert, as on a kubeadm cluster.
	ClientCA string
	// SigningCert and SigningKey are the CA for --cluster-signing-cert-file/-key-file, which
	// the API server trusts for client certificates (signingCAAuthn), as kubeadm's ca.crt and
	// ca.key: a kubelet client certificate a controller manager signs authenticates.
	SigningCert, SigningKey string
	// FrontProxyCA is kubeadm's front-proxy-ca.crt (--requestheader-client-ca-file); this
	// cluster has no front proxy, so nothing presents a certificate it signed.
	FrontProxyCA string
	// ServiceAccountKey is the key the API server trusts for service account tokens (kubeadm's
	// sa.key), so that legacy tokens signed with it authenticate.
	ServiceAccountKey string
}

// configureKubeadmAuth makes the API server authenticate as kubeadm's does: client
// certificates signed by the cluster signing CA (written now, before the API server starts),
// bootstrap tokens (--enable-bootstrap-token-auth), and kubeadm's --authorization-mode=Node,RBAC
// with the NodeRestriction admission plugin, so that a node whose kubelet joined with a
// bootstrap token can register itself.
func (c *Cluster) configureKubeadmAuth(apiserver *envtest.APIServer) error {
	dir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var err error
	if c.PKI.SigningCert, c.PKI.SigningKey, err = writeCA(dir, "cluster-signing-ca"); err != nil {
		return err
	}
	c.PKI.ClientCA = c.PKI.SigningCert
	if apiserver.SecureServing.Authn, err = newSigningCAAuthn(c.PKI.SigningCert, c.PKI.SigningKey); err != nil {
		return err
	}
	apiserver.Configure().Set("enable-bootstrap-token-auth", "true").
		Set("authorization-mode", "Node,RBAC").Set("enable-admission-plugins", "NodeRestriction")
	return nil
}

// writeKubeadmFiles writes PKI and controller-manager.conf (a kubeconfig for
// ControllerManagerUser, by client certificate) for the running API server.
func (c *Cluster) writeKubeadmFiles() error {
	dir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	certDir := c.env.ControlPlane.GetAPIServer().CertDir
	c.PKI.CA = filepath.Join(dir, "ca.crt")
	c.PKI.ServiceAccountKey = filepath.Join(dir, "sa.key")
	if err := os.WriteFile(c.PKI.CA, c.Config.CAData, 0o644); err != nil {
		return err
	}
	// envtest's name for the API server's --service-account-signing-key-file.
	data, err := os.ReadFile(filepath.Join(certDir, "sa-signer.key"))
	if err != nil {
		return fmt.Errorf("reading the API server's sa-signer.key: %w", err)
	}
	if err := os.WriteFile(c.PKI.ServiceAccountKey, data, 0o600); err != nil {
		return err
	}
	if c.PKI.FrontProxyCA, _, err = writeCA(dir, "front-proxy-ca"); err != nil {
		return err
	}

	user, err := c.env.AddUser(envtest.User{Name: ControllerManagerUser}, c.Config)
	if err != nil {
		return fmt.Errorf("adding user %s: %w", ControllerManagerUser, err)
	}
	conf, err := user.KubeConfig()
	if err != nil {
		return err
	}
	c.ControllerManagerKubeconfig = filepath.Join(c.Dir, "controller-manager.conf")
	return os.WriteFile(c.ControllerManagerKubeconfig, conf, 0o600)
}

// writeCA writes a new self-signed CA as <dir>/<name>.crt and <name>.key.
func writeCA(dir, name string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	if err != nil {
		return "", "", err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return "", "", err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := certutil.WriteCert(certFile, certPEM); err != nil {
		return "", "", err
	}
	return certFile, keyFile, keyutil.WriteKey(keyFile, keyPEM)
}

// KubeadmArgs is the command line kubeadm v1.37 writes into the kube-controller-manager
// static pod (/etc/kubernetes/manifests/kube-controller-manager.yaml), with this cluster's
// files in place of /etc/kubernetes/...: the identity ControllerManagerUser with
// --use-service-account-credentials, so that each controller acts as its own
// ServiceAccount under the API server's own system:controller:<name> role, as on a kubeadm
// cluster. Each override ("--name=value") replaces the flag of that name, or is added: a
// list flag such as --controllers given twice would append rather than replace.
func (c *Cluster) KubeadmArgs(overrides ...string) []string {
	args := []string{
		"--allocate-node-cidrs=true",
		"--authentication-kubeconfig=" + c.ControllerManagerKubeconfig,
		"--authorization-kubeconfig=" + c.ControllerManagerKubeconfig,
		"--bind-address=127.0.0.1",
		"--client-ca-file=" + c.PKI.ClientCA,
		"--cluster-cidr=10.244.0.0/16",
		"--cluster-name=kubernetes",
		"--cluster-signing-cert-file=" + c.PKI.SigningCert,
		"--cluster-signing-key-file=" + c.PKI.SigningKey,
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--kubeconfig=" + c.ControllerManagerKubeconfig,
		"--leader-elect=true",
		"--requestheader-client-ca-file=" + c.PKI.FrontProxyCA,
		"--root-ca-file=" + c.PKI.CA,
		"--service-account-private-key-file=" + c.PKI.ServiceAccountKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--use-service-account-credentials=true",
	}
	for _, o := range overrides {
		name := flagName(o)
		replaced := false
		for i, a := range args {
			if flagName(a) == name {
				args[i], replaced = o, true
			}
		}
		if !replaced {
			args = append(args, o)
		}
	}
	return args
}

// flagName is the name of a "--name=value" or "--name" argument.
func flagName(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name
}
