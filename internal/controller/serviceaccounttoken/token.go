package serviceaccounttoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/keyutil"
)

// Issuer is the iss claim of legacy service account tokens, which the API server's
// --service-account-key-file authenticator accepts.
const Issuer = "kubernetes/serviceaccount"

// LegacyClaims are the private claims of a legacy token, with upstream's names.
type LegacyClaims struct {
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name"`
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid"`
}

// Generator signs legacy tokens with one private key.
type Generator struct {
	signer jose.Signer
}

// NewGeneratorFromFile reads a PEM private key (RSA, or ECDSA on P-256/384/521, in PKCS#1,
// SEC 1 or PKCS#8 form), as --service-account-private-key-file names it.
func NewGeneratorFromFile(path string) (*Generator, error) {
	key, err := keyutil.PrivateKeyFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --service-account-private-key-file: %w", err)
	}
	g, err := NewGenerator(key)
	if err != nil {
		return nil, fmt.Errorf("--service-account-private-key-file %s: %w", path, err)
	}
	return g, nil
}

// NewGenerator signs with an RSA key (RS256) or an ECDSA key (ES256/384/512 by curve), with a
// key ID derived from the public key as upstream does, so verifiers can pick the key.
func NewGenerator(key crypto.PrivateKey) (*Generator, error) {
	var alg jose.SignatureAlgorithm
	var public crypto.PublicKey
	switch k := key.(type) {
	case *rsa.PrivateKey:
		alg, public = jose.RS256, &k.PublicKey
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		default:
			return nil, fmt.Errorf("unknown private key curve, must be 256, 384, or 521")
		}
		public = &k.PublicKey
	default:
		return nil, fmt.Errorf("unknown private key type %T, must be *rsa.PrivateKey or *ecdsa.PrivateKey", key)
	}
	kid, err := KeyID(public)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{
		Algorithm: alg,
		Key:       &jose.JSONWebKey{Algorithm: string(alg), Key: key, KeyID: kid, Use: "sig"},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating signer: %w", err)
	}
	return &Generator{signer: signer}, nil
}

// KeyID is upstream's key ID: the unpadded base64url SHA-256 of the DER public key.
func KeyID(public crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(public)
	if err != nil {
		return "", fmt.Errorf("serializing public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Generate returns the signed token identifying sa, stored in secret. Legacy tokens carry no
// expiry, audience or issue time: they are valid while the Secret and ServiceAccount exist.
func (g *Generator) Generate(sa *corev1.ServiceAccount, secret *corev1.Secret) (string, error) {
	return jwt.Signed(g.signer).
		Claims(&LegacyClaims{
			Namespace:          sa.Namespace,
			SecretName:         secret.Name,
			ServiceAccountName: sa.Name,
			ServiceAccountUID:  string(sa.UID),
		}).
		Claims(&jwt.Claims{
			Issuer:  Issuer,
			Subject: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		}).
		CompactSerialize()
}
