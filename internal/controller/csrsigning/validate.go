package csrsigning

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The built-in signers kcm runs, as upstream names them.
const (
	KubeAPIServerClient        = certificatesv1.KubeAPIServerClientSignerName
	KubeAPIServerClientKubelet = certificatesv1.KubeAPIServerClientKubeletSignerName
	KubeletServing             = certificatesv1.KubeletServingSignerName
	LegacyUnknown              = certificatesv1beta1.LegacyUnknownSignerName
)

// Upstream's messages for requests a signer refuses; they become the Failed condition's
// message.
var (
	errOrganizationNotSystemNodes = errors.New("subject organization is not system:nodes")
	errCommonNameNotSystemNode    = errors.New("subject common name does not begin with system:node:")
	errDNSOrIPSANRequired         = errors.New("DNS or IP subjectAltName is required")
	errDNSSANNotAllowed           = errors.New("DNS subjectAltNames are not allowed")
	errEmailSANNotAllowed         = errors.New("Email subjectAltNames are not allowed") //nolint:staticcheck // upstream's message
	errIPSANNotAllowed            = errors.New("IP subjectAltNames are not allowed")
	errURISANNotAllowed           = errors.New("URI subjectAltNames are not allowed")
)

// The usage sets a kubelet's certificates may have: with key encipherment (RSA keys) or
// without it (ECDSA, ed25519 keys).
var (
	kubeletServingUsages      = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageServerAuth))
	kubeletServingUsagesNoRSA = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageServerAuth))
	kubeletClientUsages       = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageClientAuth))
	kubeletClientUsagesNoRSA  = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageClientAuth))
)

// parseRequest reads spec.request: one PEM CERTIFICATE REQUEST block.
func parseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// validate is signerName's check of a request: nil when the signer may issue it, else the
// reason it never will, which upstream records as the Failed condition.
func validate(signerName string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch signerName {
	case KubeletServing:
		return validateKubeletServing(req, usageSet(usages))
	case KubeAPIServerClientKubelet:
		return validateKubeletClient(req, usageSet(usages))
	case KubeAPIServerClient:
		return validateAPIServerClientUsages(usages)
	default:
		// legacy-unknown keeps v1beta1's behaviour: no restriction at all.
		return nil
	}
}

// validateKubeletServing: a node's serving certificate names the node (system:node:<name>
// in system:nodes), is for at least one DNS name or IP, and is only for serving.
func validateKubeletServing(req *x509.CertificateRequest, usages sets.Set[string]) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganizationNotSystemNodes
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return errDNSOrIPSANRequired
	}
	if len(req.EmailAddresses) > 0 {
		return errEmailSANNotAllowed
	}
	if len(req.URIs) > 0 {
		return errURISANNotAllowed
	}
	if !usages.Equal(kubeletServingUsages) && !usages.Equal(kubeletServingUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletServingUsages))
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonNameNotSystemNode
	}
	return nil
}

// validateKubeletClient: a node's client certificate names the node and nothing else, and is
// only for client authentication. The order of the checks is upstream's, which decides the
// message when several fail.
func validateKubeletClient(req *x509.CertificateRequest, usages sets.Set[string]) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganizationNotSystemNodes
	}
	if len(req.DNSNames) > 0 {
		return errDNSSANNotAllowed
	}
	if len(req.EmailAddresses) > 0 {
		return errEmailSANNotAllowed
	}
	if len(req.IPAddresses) > 0 {
		return errIPSANNotAllowed
	}
	if len(req.URIs) > 0 {
		return errURISANNotAllowed
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonNameNotSystemNode
	}
	if !usages.Equal(kubeletClientUsages) && !usages.Equal(kubeletClientUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletClientUsages))
	}
	return nil
}

// validateAPIServerClientUsages: any client of the API server, but a client certificate
// only: client auth required, digital signature and key encipherment allowed, nothing else.
func validateAPIServerClientUsages(usages []certificatesv1.KeyUsage) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

func usageSet(usages []certificatesv1.KeyUsage) sets.Set[string] {
	s := sets.New[string]()
	for _, u := range usages {
		s.Insert(string(u))
	}
	return s
}
