package csrapproving

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

var (
	clientUsages    = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	rsaClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
)

func TestMatching(t *testing.T) {
	nodes := []string{"system:nodes"}
	cases := []struct {
		name     string
		user     string
		signer   string
		usages   []certificatesv1.KeyUsage
		template x509.CertificateRequest
		want     []string
	}{
		{name: "new node client from a bootstrap token", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}},
			want:     []string{nodeClientResource}},
		{name: "a node renewing its own: self first, then as a new node client", user: "system:node:n1",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}},
			want:     []string{selfClientResource, nodeClientResource}},
		{name: "a node asking for another node is no renewal", user: "system:node:n1",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n2", Organization: nodes}},
			want:     []string{nodeClientResource}},
		{name: "RSA usages with key encipherment", user: "system:bootstrap:abcdef", usages: rsaClientUsages,
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}},
			want:     []string{nodeClientResource}},
		{name: "usages repeated count once", user: "system:bootstrap:abcdef", usages: append(clientUsages, certificatesv1.UsageClientAuth),
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}},
			want:     []string{nodeClientResource}},
		{name: "another signer", user: "system:node:n1", signer: certificatesv1.KubeAPIServerClientSignerName,
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}}},
		{name: "server auth too", user: "system:bootstrap:abcdef",
			usages:   append(clientUsages, certificatesv1.UsageServerAuth),
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}}},
		{name: "no client auth", user: "system:bootstrap:abcdef",
			usages:   []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment},
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}}},
		{name: "key encipherment without digital signature", user: "system:bootstrap:abcdef",
			usages:   []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}}},
		{name: "organization system:masters", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:masters"}}}},
		{name: "a second organization", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes", "system:masters"}}}},
		{name: "no organization", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1"}}},
		{name: "common name not a node's", user: "admin",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "admin", Organization: nodes}}},
		{name: "DNS name", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}, DNSNames: []string{"n1"}}},
		{name: "IP address", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}},
		{name: "email address", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}, EmailAddresses: []string{"n1@example.com"}}},
		{name: "URI", user: "system:bootstrap:abcdef",
			template: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: nodes}, URIs: []*url.URL{{Scheme: "spiffe", Host: "n1"}}}},
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			der, err := x509.CreateCertificateRequest(rand.Reader, &tc.template, key)
			if err != nil {
				t.Fatal(err)
			}
			req, err := x509.ParseCertificateRequest(der)
			if err != nil {
				t.Fatal(err)
			}
			csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
				Username: tc.user, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: clientUsages,
			}}
			if tc.signer != "" {
				csr.Spec.SignerName = tc.signer
			}
			if tc.usages != nil {
				csr.Spec.Usages = tc.usages
			}
			var got []string
			for _, r := range matching(csr, req) {
				got = append(got, r.name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("matching = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRecognizersAskUpstreamsPermissions(t *testing.T) {
	want := map[string]string{selfClientResource: SelfClientMessage, nodeClientResource: NodeClientMessage}
	for _, r := range recognizers {
		p := r.permission
		if p.Group != "certificates.k8s.io" || p.Version != "*" || p.Resource != "certificatesigningrequests" || p.Verb != "create" || p.Subresource != r.name {
			t.Errorf("%s asks %+v", r.name, p)
		}
		if r.message != want[r.name] {
			t.Errorf("%s approves with %q, want %q", r.name, r.message, want[r.name])
		}
	}
}

func TestDecided(t *testing.T) {
	cases := []struct {
		name       string
		conditions []certificatesv1.RequestConditionType
		want       bool
	}{
		{name: "pending"},
		{name: "approved", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved}, want: true},
		{name: "denied", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied}, want: true},
		{name: "failed only", conditions: []certificatesv1.RequestConditionType{certificatesv1.CertificateFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{}
			for _, c := range tc.conditions {
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue})
			}
			if got := decided(csr); got != tc.want {
				t.Errorf("decided = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	if _, err := parseRequest([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")); err == nil {
		t.Error("a CERTIFICATE block parsed as a request")
	}
	if _, err := parseRequest([]byte("garbage")); err == nil {
		t.Error("garbage parsed as a request")
	}
}
