package csrcleaner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestDeadline(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(typ certificatesv1.RequestConditionType, at metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, LastUpdateTime: at}
	}
	valid, expired := certPEM(t, now.Add(time.Hour)), certPEM(t, now.Add(-time.Second))
	const eps = time.Second
	cases := []struct {
		name    string
		created metav1.Time
		conds   []certificatesv1.CertificateSigningRequestCondition
		cert    []byte
		gone    bool
	}{
		{"pending just under a day", ago(24*time.Hour - eps), nil, nil, false},
		{"pending just over a day", ago(24*time.Hour + eps), nil, nil, true},
		{"pending without a creation time", metav1.Time{}, nil, nil, false},
		{"issued just under an hour after approval", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Hour-eps))}, valid, false},
		{"issued just over an hour after approval", ago(time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Hour+eps))}, valid, true},
		{"issued, certificate expired, approved just now", ago(time.Minute), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Minute))}, expired, true},
		{"issued, certificate unparsable, approval recent", ago(time.Minute), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Minute))}, []byte("junk"), false},
		{"an expired certificate without approval is not the expiry rule", ago(time.Minute), nil, expired, false},
		{"approved unissued after two hours", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(2*time.Hour))}, nil, false},
		{"approved unissued just over a day", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(24*time.Hour+eps))}, nil, true},
		{"approved without a timestamp", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, metav1.Time{})}, nil, false},
		{"denied just under an hour", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, ago(time.Hour-eps))}, nil, false},
		{"denied just over an hour", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, ago(time.Hour+eps))}, nil, true},
		{"failed just under an hour", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Hour-eps)), cond(certificatesv1.CertificateFailed, ago(time.Hour-eps))}, nil, false},
		{"failed just over an hour", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Hour+eps)), cond(certificatesv1.CertificateFailed, ago(time.Hour+eps))}, nil, true},
		{"a condition of another type keeps it, whatever its age", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond("Other", ago(48*time.Hour))}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: c.created}}
			csr.Status.Conditions, csr.Status.Certificate = c.conds, c.cert
			deadline, reason, ok := Deadline(csr)
			if gone := ok && now.After(deadline); gone != c.gone {
				t.Errorf("gone = %v (deadline %v, %q), want %v", gone, deadline, reason, c.gone)
			}
		})
	}
}

// The deadline is the earliest rule's: an issued request whose certificate expires before
// the hour after approval goes at the expiry.
func TestDeadlineEarliestRule(t *testing.T) {
	approved := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	expiry := approved.Add(10 * time.Minute)
	csr := &certificatesv1.CertificateSigningRequest{}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, LastUpdateTime: metav1.NewTime(approved)}}
	csr.Status.Certificate = certPEM(t, expiry)
	deadline, reason, ok := Deadline(csr)
	if !ok || !deadline.Equal(expiry) {
		t.Errorf("deadline %v (%q, %v), want the expiry %v", deadline, reason, ok, expiry)
	}
}
