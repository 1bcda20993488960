package csrapproving

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// recognizer is one kind of request the controller approves: which requests it is, the
// permission the requester must hold for it, and the message of the approval.
type recognizer struct {
	name       string
	recognize  func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
	permission authorizationv1.ResourceAttributes
	message    string
}

// Upstream's approval reason and messages, on the Approved condition.
const (
	ApprovedReason     = "AutoApproved"
	NodeClientMessage  = "Auto approving kubelet client certificate after SubjectAccessReview."
	SelfClientMessage  = "Auto approving self kubelet client certificate after SubjectAccessReview."
	nodeClientResource = "nodeclient"
	selfClientResource = "selfnodeclient"
)

// recognizers are upstream's, in upstream's order: a node renewing its own client
// certificate is tried first, so that a node allowed only selfnodeclient (system:nodes) is
// approved, then a new node's client certificate (nodeclient, granted to the bootstrappers).
var recognizers = []recognizer{
	{
		name:       selfClientResource,
		recognize:  isSelfNodeClient,
		permission: csrPermission(selfClientResource),
		message:    SelfClientMessage,
	},
	{
		name:       nodeClientResource,
		recognize:  isNodeClient,
		permission: csrPermission(nodeClientResource),
		message:    NodeClientMessage,
	},
}

// csrPermission is "create certificatesigningrequests/<subresource>" in certificates.k8s.io,
// the virtual subresources RBAC grants to bootstrappers and nodes.
func csrPermission(subresource string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{
		Group: certificatesv1.GroupName, Version: "*", Resource: "certificatesigningrequests",
		Subresource: subresource, Verb: "create",
	}
}

// matching returns the recognizers csr satisfies, in the order they are tried.
func matching(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) []recognizer {
	var out []recognizer
	for _, r := range recognizers {
		if r.recognize(csr, req) {
			out = append(out, r)
		}
	}
	return out
}

// decided reports whether the request already carries an approval or a denial (of any
// status: a condition present is a decision taken, as upstream reads it).
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
	})
}

// isNodeClient: a request to the kubelet client signer whose content is a kubelet client
// certificate.
func isNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		isKubeletClientRequest(req, csr.Spec.Usages)
}

// isSelfNodeClient: a node client request made by the very user it names.
func isSelfNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClient(csr, req)
}

// kubeletClientUsages are the usage sets a kubelet client certificate may ask for exactly:
// with key encipherment (RSA keys) or without it.
var kubeletClientUsages = []sets.Set[string]{
	sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageClientAuth)),
	sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageClientAuth)),
}

// isKubeletClientRequest is the kubelet client shape: organization exactly system:nodes, a
// common name system:node:<name>, no subject alternative names, and one of the usage sets.
func isKubeletClientRequest(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) bool {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return false
	}
	if len(req.DNSNames) > 0 || len(req.EmailAddresses) > 0 || len(req.IPAddresses) > 0 || len(req.URIs) > 0 {
		return false
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return false
	}
	got := sets.New[string]()
	for _, u := range usages {
		got.Insert(string(u))
	}
	return slices.ContainsFunc(kubeletClientUsages, got.Equal)
}

// parseRequest decodes spec.request: one PEM block of type CERTIFICATE REQUEST.
func parseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}
