//go:build linux

package process_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/test/cluster"
)

const (
	rootCAConfigMap = "kube-root-ca.crt"
	rootCAKey       = "ca.crt"
	defaultSA       = "default"
)

// newNamespace creates a namespace with a fresh name: earlier specs' kcm processes may have
// filled older ones.
func newNamespace(cl client.Client) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-process-"}}
	Expect(cl.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// getSA returns a function reporting whether the ServiceAccount exists (for Eventually).
func getSA(cl client.Client, namespace, name string) func() error {
	return func() error {
		return cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &corev1.ServiceAccount{})
	}
}

// rootCAData returns a function reading the namespace's kube-root-ca.crt ca.crt.
func rootCAData(cl client.Client, namespace string) func() (string, error) {
	return func() (string, error) {
		cm := &corev1.ConfigMap{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: rootCAConfigMap}, cm); err != nil {
			return "", err
		}
		return cm.Data[rootCAKey], nil
	}
}

// beNotFound matches an error that says the object does not exist.
func beNotFound() OmegaMatcher {
	return WithTransform(apierrors.IsNotFound, BeTrue())
}

// getLease reads the Lease kube-system/name, nil when it does not exist.
func getLease(cl client.Client, name string) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	err := cl.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: name}, lease)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return lease, err
}

// holder returns a function reading the Lease's holderIdentity ("" when none or no Lease).
func holder(cl client.Client, name string) func() (string, error) {
	return func() (string, error) {
		lease, err := getLease(cl, name)
		if err != nil || lease == nil || lease.Spec.HolderIdentity == nil {
			return "", err
		}
		return *lease.Spec.HolderIdentity, nil
	}
}

// identityPattern matches controller-runtime's leader election identity on this machine:
// the hostname, "_", a UUID.
func identityPattern() string {
	GinkgoHelper()
	host, err := os.Hostname()
	Expect(err).NotTo(HaveOccurred())
	return `^` + regexp.QuoteMeta(host) + `_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
}

// writeCA writes a new self-signed CA certificate and its key into dir as <name>.crt and
// <name>.key, and returns their paths.
func writeCA(dir, name string) (certFile, keyFile string) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	Expect(err).NotTo(HaveOccurred())
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	pem, err := certutil.EncodeCertificates(cert)
	Expect(err).NotTo(HaveOccurred())
	Expect(certutil.WriteCert(certFile, pem)).To(Succeed())
	writeKey(keyFile, key)
	return certFile, keyFile
}

// writeKey writes a private key in PEM.
func writeKey(file string, key crypto.PrivateKey) {
	GinkgoHelper()
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	Expect(err).NotTo(HaveOccurred())
	Expect(keyutil.WriteKey(file, data)).To(Succeed())
}

// writeRSAKey writes a new RSA key, as kubeadm's sa.key.
func writeRSAKey(file string) {
	GinkgoHelper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	writeKey(file, key)
}

// logField returns the value under key of a kcm log line in klog's text format (a list's
// items, or a single value as one).
func logField(line, key string) []string {
	GinkgoHelper()
	l, ok := cluster.ParseLogLine(line)
	Expect(ok).To(BeTrue(), "not a structured klog line: %q", line)
	return l.Strings(key)
}

// workersStarted returns a function counting the controller's "Starting workers" log lines.
func workersStarted(p *process, name string) func() int {
	return func() int {
		n := 0
		for _, line := range p.Lines(`"Starting workers"`) {
			if l, ok := cluster.ParseLogLine(line); ok && l.Message == "Starting workers" && l.Fields["controller"] == name {
				n++
			}
		}
		return n
	}
}

// notBuiltAmong lists the registry's controllers that kcm has not built yet, of those
// enabled: on by default, or named in extra, and not turned off by a feature gate's default.
func notBuiltAmong(extra ...string) []string {
	gates := options.New().FeatureGates
	var names []string
	for _, d := range controller.Registry() {
		if d.Built() || (d.DisabledByDefault && !slices.Contains(extra, d.Name)) {
			continue
		}
		if slices.ContainsFunc(d.FeatureGates, func(g featuregate.Feature) bool { return !gates.Enabled(g) }) {
			continue
		}
		names = append(names, d.Name)
	}
	return names
}

// newDeployment is a Deployment of replicas pods of one pause container.
func newDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// forbiddenLines returns the lines of the process's output that say "forbidden", in any
// case: a request the API server refused for want of a right.
func forbiddenLines(p *process) []string {
	var lines []string
	for _, l := range strings.Split(p.Output(), "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			lines = append(lines, l)
		}
	}
	return lines
}
