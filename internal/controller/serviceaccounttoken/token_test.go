package serviceaccounttoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGenerateSignsLegacyClaims(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder", UID: "sa-uid"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder-token"}}
	for _, tt := range []struct {
		name   string
		key    crypto.Signer
		alg    string
		encode func(crypto.Signer) (string, []byte)
	}{
		{"RSA PKCS#1", rsaKey, "RS256", func(k crypto.Signer) (string, []byte) {
			return "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.(*rsa.PrivateKey))
		}},
		{"ECDSA P-256 SEC 1", p256, "ES256", func(k crypto.Signer) (string, []byte) {
			der, _ := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
			return "EC PRIVATE KEY", der
		}},
		{"ECDSA P-384 PKCS#8", p384, "ES384", pkcs8},
		{"ECDSA P-521 PKCS#8", p521, "ES512", pkcs8},
		{"RSA PKCS#8", rsaKey, "RS256", pkcs8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			typ, der := tt.encode(tt.key)
			path := filepath.Join(t.TempDir(), "sa.key")
			if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
				t.Fatal(err)
			}
			g, err := NewGeneratorFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			token, err := g.Generate(sa, secret)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := jwt.ParseSigned(token)
			if err != nil {
				t.Fatal(err)
			}
			kid, _ := KeyID(tt.key.Public())
			if h := parsed.Headers[0]; h.Algorithm != tt.alg || h.KeyID != kid {
				t.Errorf("header alg=%s kid=%s, want %s %s", h.Algorithm, h.KeyID, tt.alg, kid)
			}
			var public jwt.Claims
			var private LegacyClaims
			if err := parsed.Claims(tt.key.Public(), &public, &private); err != nil {
				t.Fatalf("verifying with the public key: %v", err)
			}
			want := LegacyClaims{Namespace: "ns", SecretName: "builder-token", ServiceAccountName: "builder", ServiceAccountUID: "sa-uid"}
			if private != want {
				t.Errorf("private claims %+v, want %+v", private, want)
			}
			if public.Issuer != Issuer || public.Subject != "system:serviceaccount:ns:builder" || public.Expiry != nil || len(public.Audience) != 0 {
				t.Errorf("public claims %+v", public)
			}
			other, _ := rsa.GenerateKey(rand.Reader, 2048)
			if err := parsed.Claims(&other.PublicKey, &public); err == nil {
				t.Error("the token verified with another key")
			}
		})
	}
}

func pkcs8(k crypto.Signer) (string, []byte) {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return "PRIVATE KEY", der
}

func TestNewGeneratorFromFileErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.key")
	_ = os.WriteFile(garbage, []byte("not a key"), 0o600)
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(p224)
	oddCurve := filepath.Join(dir, "p224.key")
	_ = os.WriteFile(oddCurve, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.key"): "no such file",
		garbage:                           "--service-account-private-key-file",
		oddCurve:                          "curve",
	} {
		if _, err := NewGeneratorFromFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", filepath.Base(path), err, want)
		}
	}
}

func TestNeeds(t *testing.T) {
	ca := []byte("CA")
	full := map[string][]byte{"ca.crt": ca, "namespace": []byte("ns"), "token": []byte("t")}
	for _, tt := range []struct {
		name   string
		data   map[string][]byte
		rootCA []byte
		want   Missing
	}{
		{"complete", full, ca, Missing{}},
		{"empty", nil, ca, Missing{CA: true, Namespace: true, Token: true}},
		{"no root CA leaves ca.crt alone", map[string][]byte{"namespace": []byte("ns"), "token": []byte("t")}, nil, Missing{}},
		{"another CA is replaced", full, []byte("new CA"), Missing{CA: true}},
		{"empty token", map[string][]byte{"ca.crt": ca, "namespace": []byte("ns"), "token": {}}, ca, Missing{Token: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Needs(&corev1.Secret{Data: tt.data}, tt.rootCA); got != tt.want {
				t.Errorf("Needs = %+v, want %+v", got, tt.want)
			}
		})
	}
}
