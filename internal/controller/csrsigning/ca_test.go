package csrsigning

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// writeCA writes a self-signed CA valid until notAfter to dir.
func writeCA(t *testing.T, dir string, notAfter time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}}, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no PEM in %q", certPEM)
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return crt
}

// TestNewCAErrors: upstream's startup failures for a pair that cannot sign.
func TestNewCAErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCA(t, dir, time.Now().Add(time.Hour))
	if _, err := NewCA(certFile, ""); err == nil {
		t.Error("a half pair loaded")
	}
	if _, err := NewCA(filepath.Join(dir, "missing.crt"), keyFile); err == nil {
		t.Error("a missing file loaded")
	}
	other := t.TempDir()
	_, otherKey := writeCA(t, other, time.Now().Add(time.Hour))
	if _, err := NewCA(certFile, otherKey); err == nil {
		t.Error("a cert with another CA's key loaded")
	}
	if _, err := NewCA(certFile, keyFile); err != nil {
		t.Errorf("a good pair did not load: %v", err)
	}
}
