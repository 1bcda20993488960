package csrapproving_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/manager"
)

// bind binds a ClusterRole to a group.
func bind(ctx context.Context, name, role, group string) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	})).To(Succeed())
}

// as is a client acting as user in groups (and the requesters group): the API server records
// that user and those groups in the requests it creates.
func as(user string, groups ...string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, requesters)}
	cl, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

// request is a kubelet-client-shaped request unless the arguments say otherwise.
type request struct {
	commonName    string
	organizations []string
	dnsNames      []string
	signer        string
	usages        []certificatesv1.KeyUsage
}

func kubeletClient(node string) request {
	return request{
		commonName:    "system:node:" + node,
		organizations: []string{"system:nodes"},
		signer:        certificatesv1.KubeAPIServerClientKubeletSignerName,
		usages:        []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}
}

// create creates the request as cl's user and returns its name.
func create(ctx context.Context, cl client.Client, r request) string {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: r.commonName, Organization: r.organizations},
		DNSNames: r.dnsNames,
	}, key)
	Expect(err).NotTo(HaveOccurred())
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer,
			Usages:     r.usages,
		},
	}
	Expect(cl.Create(ctx, csr)).To(Succeed())
	return csr.Name
}
