package csrsigning

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const (
	ds = certificatesv1.UsageDigitalSignature
	ke = certificatesv1.UsageKeyEncipherment
	ca = certificatesv1.UsageClientAuth
	sa = certificatesv1.UsageServerAuth
)

func node(mutate func(*x509.CertificateRequest)) *x509.CertificateRequest {
	r := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}
	if mutate != nil {
		mutate(r)
	}
	return r
}

func TestValidate(t *testing.T) {
	withDNS := func(r *x509.CertificateRequest) { r.DNSNames = []string{"n1.example"} }
	cases := []struct {
		name   string
		signer string
		req    *x509.CertificateRequest
		usages []certificatesv1.KeyUsage
		want   string // "" = valid
	}{
		{"kubelet client RSA", KubeAPIServerClientKubelet, node(nil), []certificatesv1.KeyUsage{ds, ke, ca}, ""},
		{"kubelet client ECDSA", KubeAPIServerClientKubelet, node(nil), []certificatesv1.KeyUsage{ca, ds}, ""},
		{"kubelet client duplicate usages are a set", KubeAPIServerClientKubelet, node(nil), []certificatesv1.KeyUsage{ca, ds, ca}, ""},
		{"kubelet client server auth", KubeAPIServerClientKubelet, node(nil), []certificatesv1.KeyUsage{ds, ke, sa}, "usages did not match [client auth digital signature key encipherment]"},
		{"kubelet client no usages", KubeAPIServerClientKubelet, node(nil), nil, "usages did not match [client auth digital signature key encipherment]"},
		{"kubelet client wrong org", KubeAPIServerClientKubelet, node(func(r *x509.CertificateRequest) { r.Subject.Organization = []string{"system:masters"} }), []certificatesv1.KeyUsage{ds, ca}, "subject organization is not system:nodes"},
		{"kubelet client two orgs", KubeAPIServerClientKubelet, node(func(r *x509.CertificateRequest) { r.Subject.Organization = []string{"system:nodes", "x"} }), []certificatesv1.KeyUsage{ds, ca}, "subject organization is not system:nodes"},
		{"kubelet client DNS SAN", KubeAPIServerClientKubelet, node(withDNS), []certificatesv1.KeyUsage{ds, ca}, "DNS subjectAltNames are not allowed"},
		{"kubelet client email SAN", KubeAPIServerClientKubelet, node(func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"a@b"} }), []certificatesv1.KeyUsage{ds, ca}, "Email subjectAltNames are not allowed"},
		{"kubelet client IP SAN", KubeAPIServerClientKubelet, node(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")} }), []certificatesv1.KeyUsage{ds, ca}, "IP subjectAltNames are not allowed"},
		{"kubelet client URI SAN", KubeAPIServerClientKubelet, node(func(r *x509.CertificateRequest) { r.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}} }), []certificatesv1.KeyUsage{ds, ca}, "URI subjectAltNames are not allowed"},
		{"kubelet client CN before usages", KubeAPIServerClientKubelet, node(func(r *x509.CertificateRequest) { r.Subject.CommonName = "bob" }), []certificatesv1.KeyUsage{sa}, "subject common name does not begin with system:node:"},

		{"kubelet serving RSA", KubeletServing, node(withDNS), []certificatesv1.KeyUsage{ds, ke, sa}, ""},
		{"kubelet serving ECDSA with IP", KubeletServing, node(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")} }), []certificatesv1.KeyUsage{ds, sa}, ""},
		{"kubelet serving no SAN", KubeletServing, node(nil), []certificatesv1.KeyUsage{ds, sa}, "DNS or IP subjectAltName is required"},
		{"kubelet serving email SAN", KubeletServing, node(func(r *x509.CertificateRequest) { withDNS(r); r.EmailAddresses = []string{"a@b"} }), []certificatesv1.KeyUsage{ds, sa}, "Email subjectAltNames are not allowed"},
		{"kubelet serving URI SAN", KubeletServing, node(func(r *x509.CertificateRequest) { withDNS(r); r.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}} }), []certificatesv1.KeyUsage{ds, sa}, "URI subjectAltNames are not allowed"},
		{"kubelet serving client auth", KubeletServing, node(withDNS), []certificatesv1.KeyUsage{ds, ca}, "usages did not match [digital signature key encipherment server auth]"},
		{"kubelet serving usages before CN", KubeletServing, node(func(r *x509.CertificateRequest) { withDNS(r); r.Subject.CommonName = "bob" }), []certificatesv1.KeyUsage{ca}, "usages did not match [digital signature key encipherment server auth]"},
		{"kubelet serving wrong CN", KubeletServing, node(func(r *x509.CertificateRequest) { withDNS(r); r.Subject.CommonName = "bob" }), []certificatesv1.KeyUsage{ds, sa}, "subject common name does not begin with system:node:"},
		{"kubelet serving wrong org", KubeletServing, node(func(r *x509.CertificateRequest) { withDNS(r); r.Subject.Organization = nil }), []certificatesv1.KeyUsage{ds, sa}, "subject organization is not system:nodes"},

		{"apiserver client any subject", KubeAPIServerClient, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, []certificatesv1.KeyUsage{ca}, ""},
		{"apiserver client optional usages", KubeAPIServerClient, &x509.CertificateRequest{}, []certificatesv1.KeyUsage{ke, ds, ca}, ""},
		{"apiserver client server auth", KubeAPIServerClient, &x509.CertificateRequest{}, []certificatesv1.KeyUsage{ca, sa}, "invalid usage for client certificate: server auth"},
		{"apiserver client missing client auth", KubeAPIServerClient, &x509.CertificateRequest{}, []certificatesv1.KeyUsage{ds}, "missing required usage for client certificate: client auth"},

		{"legacy-unknown anything", LegacyUnknown, &x509.CertificateRequest{}, []certificatesv1.KeyUsage{sa, certificatesv1.UsageCodeSigning}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := validate(c.signer, c.req, c.usages)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("validate = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	year := 365 * 24 * time.Hour
	cases := []struct {
		name    string
		max     time.Duration
		seconds *int32
		want    time.Duration
	}{
		{"no request: the flag", year, nil, year},
		{"shorter request honoured", year, ptr.To[int32](3600), time.Hour},
		{"longer request capped", time.Hour, ptr.To[int32](7200), time.Hour},
		{"equal to the flag", time.Hour, ptr.To[int32](3600), time.Hour},
		{"under the minimum raised", year, ptr.To[int32](60), 10 * time.Minute},
		{"exactly the minimum", year, ptr.To[int32](600), 10 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := duration(c.max, c.seconds); got != c.want {
				t.Errorf("duration = %v, want %v", got, c.want)
			}
		})
	}
}

func TestValidity(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	far := now.Add(10 * 365 * 24 * time.Hour)
	cases := []struct {
		name                string
		ttl                 time.Duration
		caNotAfter          time.Time
		notBefore, notAfter time.Time
		err                 bool
	}{
		{"short: no backdate off the end", time.Hour, far, now.Add(-5 * time.Minute), now.Add(time.Hour), false},
		{"just under 8h", 8*time.Hour - time.Second, far, now.Add(-5 * time.Minute), now.Add(8*time.Hour - time.Second), false},
		{"8h: backdate off the end", 8 * time.Hour, far, now.Add(-5 * time.Minute), now.Add(8*time.Hour - 5*time.Minute), false},
		{"a year", 365 * 24 * time.Hour, far, now.Add(-5 * time.Minute), now.Add(365*24*time.Hour - 5*time.Minute), false},
		{"capped at the CA's expiry", 365 * 24 * time.Hour, now.Add(time.Hour), now.Add(-5 * time.Minute), now.Add(time.Hour), false},
		{"CA expired", time.Hour, now.Add(-time.Minute), time.Time{}, time.Time{}, true},
		{"CA expires now", time.Hour, now, time.Time{}, time.Time{}, true},
		{"CA expired before the backdate", time.Hour, now.Add(-10 * time.Minute), time.Time{}, time.Time{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nb, na, err := validity(now, c.ttl, c.caNotAfter)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if !nb.Equal(c.notBefore) || !na.Equal(c.notAfter) {
				t.Errorf("validity = %v..%v, want %v..%v", nb, na, c.notBefore, c.notAfter)
			}
		})
	}
}

func TestKeyUsages(t *testing.T) {
	cases := []struct {
		name   string
		usages []certificatesv1.KeyUsage
		ku     x509.KeyUsage
		eku    []x509.ExtKeyUsage
		err    bool
	}{
		{"kubelet client", []certificatesv1.KeyUsage{ds, ke, ca}, x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, false},
		{"signing is digital signature", []certificatesv1.KeyUsage{certificatesv1.UsageSigning, ds}, x509.KeyUsageDigitalSignature, nil, false},
		{"ext usages sorted and deduplicated", []certificatesv1.KeyUsage{ca, sa, certificatesv1.UsageSMIME, certificatesv1.UsageEmailProtection, ca}, 0,
			[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageEmailProtection}, false},
		{"unknown usage", []certificatesv1.KeyUsage{ds, "flying"}, 0, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ku, eku, err := keyUsages(c.usages)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if ku != c.ku || len(eku) != len(c.eku) {
				t.Fatalf("keyUsages = %v %v, want %v %v", ku, eku, c.ku, c.eku)
			}
			for i := range eku {
				if eku[i] != c.eku[i] {
					t.Fatalf("ext usages = %v, want %v", eku, c.eku)
				}
			}
		})
	}
}

func TestSignerFiles(t *testing.T) {
	shared := files{"ca.crt", "ca.key"}
	serving := files{"s.crt", "s.key"}
	cases := []struct {
		name string
		in   signing
		want map[string]files
		err  error
	}{
		{"nothing: skipped", signing{}, nil, nil},
		{"half a shared pair: skipped", signing{shared: files{cert: "ca.crt"}}, nil, nil},
		{"shared pair: all four", signing{shared: shared}, map[string]files{KubeletServing: shared, KubeAPIServerClientKubelet: shared, KubeAPIServerClient: shared, LegacyUnknown: shared}, nil},
		{"per signer: only those named", signing{perSigner: map[string]files{KubeletServing: serving}}, map[string]files{KubeletServing: serving}, nil},
		{"per signer half pair: kept, to fail when loaded", signing{perSigner: map[string]files{LegacyUnknown: {key: "l.key"}}}, map[string]files{LegacyUnknown: {key: "l.key"}}, nil},
		{"half shared pair with per signer: per signer", signing{shared: files{key: "ca.key"}, perSigner: map[string]files{KubeletServing: serving}}, map[string]files{KubeletServing: serving}, nil},
		{"both kinds", signing{shared: shared, perSigner: map[string]files{KubeletServing: serving}}, nil, errBothKinds},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := signerFiles(c.in)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if len(got) != len(c.want) || (got == nil) != (c.want == nil) {
				t.Fatalf("signerFiles = %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("signerFiles = %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestShouldSign(t *testing.T) {
	cond := func(t certificatesv1.RequestConditionType, s corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: s}
	}
	approved := cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	cases := []struct {
		name   string
		signer string
		conds  []certificatesv1.CertificateSigningRequestCondition
		cert   []byte
		want   bool
	}{
		{"approved", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{approved}, nil, true},
		{"pending", KubeAPIServerClient, nil, nil, false},
		{"denied", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)}, nil, false},
		{"approved and denied", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{approved, cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)}, nil, false},
		{"failed", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{approved, cond(certificatesv1.CertificateFailed, corev1.ConditionTrue)}, nil, false},
		{"failed with empty status", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{approved, cond(certificatesv1.CertificateFailed, "")}, nil, false},
		{"failed false", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{approved, cond(certificatesv1.CertificateFailed, corev1.ConditionFalse)}, nil, true},
		{"already issued", KubeAPIServerClient, []certificatesv1.CertificateSigningRequestCondition{approved}, []byte("x"), false},
		{"another signer", KubeletServing, []certificatesv1.CertificateSigningRequestCondition{approved}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{}
			csr.Spec.SignerName = KubeAPIServerClient
			csr.Status.Conditions = c.conds
			csr.Status.Certificate = c.cert
			if got := shouldSign(csr, c.signer); got != c.want {
				t.Errorf("shouldSign = %v, want %v", got, c.want)
			}
		})
	}
}

// TestSignTemplate checks the certificate itself: the request's subject and SANs, the
// usages as key usage bits and extended usages, not a CA, issued by the CA and verifying
// against it, with the backdated validity.
func TestSignTemplate(t *testing.T) {
	caCertFile, caKeyFile := writeCA(t, t.TempDir(), time.Now().Add(24*time.Hour))
	c, err := NewCA(caCertFile, caKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		DNSNames:    []string{"n1.example"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := x509.ParseCertificateRequest(der)
	now := time.Now()
	certPEM, err := c.Sign(req, []certificatesv1.KeyUsage{ds, ke, sa}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	crt := parseCert(t, certPEM)
	caCert, _, _ := c.Current()
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSName: "n1.example"}); err != nil {
		t.Errorf("does not verify against the CA: %v", err)
	}
	if crt.Subject.CommonName != "system:node:n1" || len(crt.Subject.Organization) != 1 || crt.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %v", crt.Subject)
	}
	if len(crt.IPAddresses) != 1 || !crt.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("IPs = %v", crt.IPAddresses)
	}
	if crt.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Errorf("key usage = %v", crt.KeyUsage)
	}
	if len(crt.ExtKeyUsage) != 1 || crt.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ext key usage = %v", crt.ExtKeyUsage)
	}
	if crt.IsCA || !crt.BasicConstraintsValid {
		t.Errorf("IsCA = %v, BasicConstraintsValid = %v", crt.IsCA, crt.BasicConstraintsValid)
	}
	if want := now.Add(-backdate).Truncate(time.Second); !crt.NotBefore.Equal(want) {
		t.Errorf("NotBefore = %v, want %v", crt.NotBefore, want)
	}
	if want := now.Add(time.Hour).Truncate(time.Second); !crt.NotAfter.Equal(want) {
		t.Errorf("NotAfter = %v, want %v", crt.NotAfter, want)
	}
	if crt.SerialNumber.Sign() <= 0 {
		t.Errorf("serial = %v", crt.SerialNumber)
	}
}
