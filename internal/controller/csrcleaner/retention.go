package csrcleaner

import (
	"crypto/x509"
	"encoding/pem"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's retention: how long a request is kept in each state.
const (
	// IssuedRetention keeps an approved request with its certificate for an hour after the
	// approval.
	IssuedRetention = time.Hour
	// DecidedRetention keeps a denied or failed request for an hour after the condition.
	DecidedRetention = time.Hour
	// PendingRetention keeps a request nobody decided, and an approved one never issued, for
	// a day (from its creation, and from its approval).
	PendingRetention = 24 * time.Hour
)

// Deadline is when the request stops being kept: the earliest moment any of upstream's
// rules lets it go, and the rule's reason. ok is false when no rule ever applies (a condition
// without a timestamp, a certificate that does not parse). The request goes once now is
// after the deadline.
func Deadline(csr *certificatesv1.CertificateSigningRequest) (deadline time.Time, reason string, ok bool) {
	consider := func(t time.Time, why string) {
		if !ok || t.Before(deadline) {
			deadline, reason, ok = t, why, true
		}
	}
	after := func(t metav1.Time, d time.Duration, why string) {
		if !t.IsZero() {
			consider(t.Add(d), why)
		}
	}
	issued := len(csr.Status.Certificate) > 0
	if len(csr.Status.Conditions) == 0 {
		after(csr.CreationTimestamp, PendingRetention, "pending for longer than a day")
	}
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if issued {
				after(c.LastUpdateTime, IssuedRetention, "approved and issued for longer than an hour")
				if notAfter, parsed := certificateNotAfter(csr.Status.Certificate); parsed {
					consider(notAfter, "its certificate expired")
				}
			} else {
				after(c.LastUpdateTime, PendingRetention, "approved but not issued for longer than a day")
			}
		case certificatesv1.CertificateDenied:
			after(c.LastUpdateTime, DecidedRetention, "denied for longer than an hour")
		case certificatesv1.CertificateFailed:
			after(c.LastUpdateTime, DecidedRetention, "failed for longer than an hour")
		}
	}
	return deadline, reason, ok
}

// certificateNotAfter is the expiry of the first certificate of the first PEM block, as
// upstream reads it.
func certificateNotAfter(data []byte) (time.Time, bool) {
	block, _ := pem.Decode(data)
	if block == nil {
		return time.Time{}, false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return time.Time{}, false
	}
	return certs[0].NotAfter, true
}
