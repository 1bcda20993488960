//go:build linux

package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/testenv"
)

// ControllerManagerUser is the identity kubeadm's controller-manager.conf gives
// kube-controller-manager; the API server's bootstrap RBAC binds it to the ClusterRole
// system:kube-controller-manager.
const ControllerManagerUser = "system:kube-controller-manager"

// ServiceClusterIPRange is the API server's Service range, kubeadm's default serviceSubnet,
// which kubeadm's static pod tells the controller manager too.
const ServiceClusterIPRange = "10.96.0.0/12"

// StaticPodManifest is kcm's static pod for kubeadm clusters, from the repository root: the
// command line KubeadmArgs starts a controller manager with.
const StaticPodManifest = "config/kubeadm/kube-controller-manager.yaml"

// nodeDir is where, under the cluster's Dir, a control-plane node's file system is: kubeadm's
// files are at <Dir>/node/etc/kubernetes/..., where a static pod's hostPath volumes find them
// (NodePath).
const nodeDir = "node"

// NodePath is where path of a kubeadm control-plane node's file system (such as
// /etc/kubernetes/pki/ca.crt) is in this cluster.
func (c *Cluster) NodePath(path string) string {
	return filepath.Join(c.Dir, nodeDir, path)
}

// configureKubeadmAuth gives the API server, before it starts, kubeadm's PKI and
// authentication: one CA, /etc/kubernetes/pki/ca.crt and ca.key, that signs the API server's
// serving certificate, verifies client certificates (--client-ca-file) and that the controller
// manager signs kubelets' certificates with, as kubeadm's; bootstrap tokens
// (--enable-bootstrap-token-auth); kubeadm's --authorization-mode=Node,RBAC with the
// NodeRestriction admission plugin, so that a node whose kubelet joined with a bootstrap token
// can register itself; and the service account signing key kubeadm keeps as sa.key.
func (c *Cluster) configureKubeadmAuth(apiserver *envtest.APIServer) error {
	pki := c.NodePath("/etc/kubernetes/pki")
	if err := os.MkdirAll(pki, 0o755); err != nil {
		return err
	}
	caCert, caKey, err := writeCA(pki, "ca")
	if err != nil {
		return err
	}
	if apiserver.SecureServing.Authn, err = newSigningCAAuthn(caCert, caKey); err != nil {
		return err
	}
	// envtest keeps the serving certificate and service account key it finds in CertDir
	// (apiserver.crt/.key, sa-signer.crt/.key) rather than making its own CAs, and trusts
	// SecureServing.CA for its clients.
	apiserver.CertDir = filepath.Join(c.Dir, "kube-apiserver")
	if err := os.MkdirAll(apiserver.CertDir, 0o700); err != nil {
		return err
	}
	if apiserver.SecureServing.CA, err = writeServingCert(apiserver.CertDir, "apiserver", caCert, caKey); err != nil {
		return err
	}
	saKey, err := writeServiceAccountKey(apiserver.CertDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "sa.key"), saKey, 0o600); err != nil {
		return err
	}
	apiserver.Configure().Set("enable-bootstrap-token-auth", "true").
		Set("authorization-mode", "Node,RBAC").Set("enable-admission-plugins", "NodeRestriction")
	return nil
}

// writeKubeadmFiles writes the rest of the node's /etc/kubernetes for the running API server:
// pki/front-proxy-ca.crt, and controller-manager.conf, a kubeconfig for ControllerManagerUser
// by client certificate. Then it reads StaticPodManifest's command line onto those files.
func (c *Cluster) writeKubeadmFiles() error {
	if _, _, err := writeCA(c.NodePath("/etc/kubernetes/pki"), "front-proxy-ca"); err != nil {
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
	c.ControllerManagerKubeconfig = c.NodePath("/etc/kubernetes/controller-manager.conf")
	if err := os.WriteFile(c.ControllerManagerKubeconfig, conf, 0o600); err != nil {
		return err
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	pod, err := ReadPod(filepath.Join(root, StaticPodManifest))
	if err != nil {
		return err
	}
	c.kubeadmArgs, err = c.PodArgs(&pod.Spec, pod.Spec.Containers[0].Name)
	if err != nil {
		return fmt.Errorf("%s on this cluster's node files: %w", StaticPodManifest, err)
	}
	return nil
}

// ReadPod reads a pod manifest, strictly: a misspelt field is an error.
func ReadPod(path string) (*corev1.Pod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pod, nil
}

// RenderDeployment renders the kustomization dir with kubectl kustomize and decodes its one
// Deployment, strictly: what a spec starts kcm with is what the kustomization ships.
func RenderDeployment(kubectl, dir string) (*appsv1.Deployment, error) {
	var stderr strings.Builder
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w\n%s", dir, err, stderr.String())
	}
	var found []*appsv1.Deployment
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if meta.Kind != "Deployment" {
			continue
		}
		dep := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict([]byte(doc), dep); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		found = append(found, dep)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s renders %d Deployments, want 1", dir, len(found))
	}
	return found[0], nil
}

// PodArgs is the command line a container of spec would run with on this cluster's node: its
// command after the binary, then its args, with each file a flag names ("--name=/path")
// replaced by the node file (NodePath) that the container's volume mounts give it at that path.
// A file no mount gives, a mount of a volume that is not a hostPath, or a node file that is
// missing is an error: the pod would fail to start, or kcm to read it.
func (c *Cluster) PodArgs(spec *corev1.PodSpec, container string) ([]string, error) {
	i := slices.IndexFunc(spec.Containers, func(ct corev1.Container) bool { return ct.Name == container })
	if i < 0 {
		return nil, fmt.Errorf("no container %q", container)
	}
	ct := spec.Containers[i]
	var args []string
	if len(ct.Command) > 0 {
		args = append(args, ct.Command[1:]...)
	}
	args = append(args, ct.Args...)
	for i, arg := range args {
		name, value, ok := strings.Cut(arg, "=")
		if !ok || !strings.HasPrefix(value, "/") {
			continue
		}
		hostPath, err := hostPathOf(spec, ct, value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		file := c.NodePath(hostPath)
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("%s: the node has no %s: %w", name, hostPath, err)
		}
		args[i] = name + "=" + file
	}
	return args, nil
}

// hostPathOf is the node path that the container's volume mounts put at path.
func hostPathOf(spec *corev1.PodSpec, ct corev1.Container, path string) (string, error) {
	for _, m := range ct.VolumeMounts {
		rest, ok := strings.CutPrefix(path, m.MountPath)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
			continue
		}
		v := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if v < 0 || spec.Volumes[v].HostPath == nil {
			return "", fmt.Errorf("%s is mounted from %q, which is no hostPath volume", path, m.Name)
		}
		return spec.Volumes[v].HostPath.Path + rest, nil
	}
	return "", fmt.Errorf("no volume mount gives the container %s", path)
}

// writeServingCert writes <dir>/<name>.crt and .key, a serving certificate for localhost and
// 127.0.0.1 signed by the CA in caCert and caKey, and returns the CA's PEM.
func writeServingCert(dir, name, caCert, caKey string) ([]byte, error) {
	ca, err := newSigningCAAuthn(caCert, caKey)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	if err := certutil.WriteCert(filepath.Join(dir, name+".crt"), certPEM); err != nil {
		return nil, err
	}
	if err := keyutil.WriteKey(filepath.Join(dir, name+".key"), keyPEM); err != nil {
		return nil, err
	}
	return certutil.EncodeCertificates(ca.cert)
}

// writeServiceAccountKey writes envtest's service account signing files into the API
// server's CertDir (sa-signer.key, and sa-signer.crt, whose public key verifies tokens): an
// RSA 2048 key, as kubeadm's sa.key. It returns the key's PEM.
func writeServiceAccountKey(certDir string) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "service-accounts"}, key)
	if err != nil {
		return nil, err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	if err := certutil.WriteCert(filepath.Join(certDir, "sa-signer.crt"), certPEM); err != nil {
		return nil, err
	}
	return keyPEM, keyutil.WriteKey(filepath.Join(certDir, "sa-signer.key"), keyPEM)
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

// KubeadmArgs is the command line of kcm's static pod for kubeadm clusters (StaticPodManifest,
// the flags kubeadm v1.37 writes into /etc/kubernetes/manifests/kube-controller-manager.yaml)
// on this cluster's node files (PodArgs): the identity ControllerManagerUser with
// --use-service-account-credentials, so that each controller acts as its own ServiceAccount
// under the API server's own system:controller:<name> role, as on a kubeadm cluster. Each
// override ("--name=value") replaces the flag of that name, or is added: a list flag such as
// --controllers given twice would append rather than replace.
func (c *Cluster) KubeadmArgs(overrides ...string) []string {
	args := slices.Clone(c.kubeadmArgs)
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
