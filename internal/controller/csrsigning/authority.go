package csrsigning

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/util/cert"
	csrutil "k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
)

// Upstream's signing policy constants.
const (
	// backdate is subtracted from NotBefore so that a client whose clock runs a little behind
	// the signer's accepts the certificate at once.
	backdate = 5 * time.Minute
	// short is the lifetime below which the backdate is not taken off NotAfter: for short
	// certificates the 5 minutes would be a noticeable share of the requested lifetime.
	short = 8 * time.Hour
	// minDuration is the shortest lifetime granted for spec.expirationSeconds: twice the
	// backdate, so that a certificate is never born already (nearly) expired.
	minDuration = 10 * time.Minute
)

// serialLimit bounds the random serial numbers to 128 bits, as upstream's.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

// CA is one signer's certificate authority, read from its --cluster-signing-*-file pair and
// re-read when the files change (the DynamicCertKeyPairContent watches them; Run drives it).
type CA struct {
	content *dynamiccertificates.DynamicCertKeyPairContent

	mu      sync.Mutex
	rawCert []byte
	rawKey  []byte
	cert    *x509.Certificate
	key     crypto.Signer
}

// NewCA loads the pair, failing as upstream's startup does when the files are missing,
// unreadable, do not match, or do not hold exactly one certificate and a signing key.
func NewCA(certFile, keyFile string) (*CA, error) {
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("csr-controller", certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("error reading CA cert file %q: %w", certFile, err)
	}
	ca := &CA{content: content}
	if _, _, err := ca.Current(); err != nil {
		return nil, err
	}
	return ca, nil
}

// Current is the CA as its files last read: the parsed pair is kept until the content
// changes. A changed pair that does not parse is an error, with the previous CA left in place.
func (c *CA) Current() (*x509.Certificate, crypto.Signer, error) {
	certPEM, keyPEM := c.content.CurrentCertKeyContent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil && bytes.Equal(c.rawCert, certPEM) && bytes.Equal(c.rawKey, keyPEM) {
		return c.cert, c.key, nil
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading CA cert file %q: %w", c.content.Name(), err)
	}
	if len(certs) != 1 {
		return nil, nil, fmt.Errorf("error reading CA cert file %q: expected 1 certificate, found %d", c.content.Name(), len(certs))
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading CA key file %q: %w", c.content.Name(), err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("error reading CA key file %q: key did not implement crypto.Signer", c.content.Name())
	}
	c.rawCert, c.rawKey, c.cert, c.key = certPEM, keyPEM, certs[0], signer
	return c.cert, c.key, nil
}

// Sign issues a certificate for the request: its subject, SANs and public key, the usages
// asked for, and the lifetime the duration and the CA's own expiry allow. The PEM is what
// status.certificate holds.
func (c *CA) Sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, ttl time.Duration, now time.Time) ([]byte, error) {
	caCert, caKey, err := c.Current()
	if err != nil {
		return nil, err
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("unable to verify certificate request signature: %w", err)
	}
	keyUsage, extKeyUsage, err := keyUsages(usages)
	if err != nil {
		return nil, err
	}
	notBefore, notAfter, err := validity(now, ttl, caCert.NotAfter)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("unable to generate a serial number for %s: %w", req.Subject.CommonName, err)
	}
	// The request's own extensions are not carried over: what the certificate may do is
	// decided by the usages the approver saw, not by what the requester embedded.
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		PublicKeyAlgorithm:    req.PublicKeyAlgorithm,
		PublicKey:             req.PublicKey,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           extKeyUsage,
		BasicConstraintsValid: true,
		IsCA:                  false,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, req.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der}), nil
}

// duration is the lifetime of a certificate: --cluster-signing-duration, or
// spec.expirationSeconds when that is shorter, but never under minDuration.
func duration(max time.Duration, expirationSeconds *int32) time.Duration {
	if expirationSeconds == nil {
		return max
	}
	switch requested := csrutil.ExpirationSecondsToDuration(*expirationSeconds); {
	case requested > max:
		return max
	case requested < minDuration:
		return minDuration
	default:
		return requested
	}
}

// validity is a certificate's NotBefore and NotAfter when signed at now for ttl: backdated,
// the backdate taken back off long lifetimes, and never past the CA's own NotAfter. An
// expired CA signs nothing.
func validity(now time.Time, ttl time.Duration, caNotAfter time.Time) (time.Time, time.Time, error) {
	notBefore := now.Add(-backdate)
	notAfter := now.Add(ttl)
	if ttl >= short {
		notAfter = now.Add(ttl - backdate)
	}
	if !notAfter.Before(caNotAfter) {
		notAfter = caNotAfter
	}
	if !notBefore.Before(caNotAfter) {
		return time.Time{}, time.Time{}, fmt.Errorf("the signer has expired: NotAfter=%v", caNotAfter)
	}
	if !now.Before(caNotAfter) {
		return time.Time{}, time.Time{}, fmt.Errorf("refusing to sign a certificate that expired in the past: NotAfter=%v", caNotAfter)
	}
	return notBefore, notAfter, nil
}

var keyUsageOf = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsageOf = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// keyUsages maps the request's usages to the certificate's key usage bits and its extended
// key usages (deduplicated, in ascending order, as upstream writes them). A usage the API
// does not define is an error.
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	var unrecognized []certificatesv1.KeyUsage
	for _, u := range usages {
		if v, ok := keyUsageOf[u]; ok {
			ku |= v
		} else if v, ok := extKeyUsageOf[u]; ok {
			if !slices.Contains(eku, v) {
				eku = append(eku, v)
			}
		} else {
			unrecognized = append(unrecognized, u)
		}
	}
	if len(unrecognized) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unrecognized)
	}
	slices.Sort(eku)
	return ku, eku, nil
}

// Run watches the CA's files until ctx ends, re-reading them when they change (and at least
// every minute, as the watch is re-established), as upstream's signers do.
func (c *CA) Run(ctx context.Context) error {
	c.content.Run(ctx, workers)
	return nil
}
