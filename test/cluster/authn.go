//go:build linux

package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math"
	"math/big"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// signingCAAuthn is envtest's client-certificate authentication (its CertAuthn) with kubeadm's
// single CA: the API server's --client-ca-file is the cluster signing CA the controller
// managers sign kubelets' client certificates with (kubeadm's ca.crt and ca.key), and the
// users envtest provisions (its administrator, ControllerManagerUser) get certificates signed
// by that CA too. envtest's own CertAuthn keeps its CA's key in memory, out of a controller
// manager's reach, so a certificate kcm issued would not authenticate.
type signingCAAuthn struct {
	certFile string
	cert     *x509.Certificate
	key      crypto.Signer
}

var _ envtest.Authn = &signingCAAuthn{}

// newSigningCAAuthn reads the CA written by writeCA.
func newSigningCAAuthn(certFile, keyFile string) (*signingCAAuthn, error) {
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		return nil, err
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s holds no signing key", keyFile)
	}
	return &signingCAAuthn{certFile: certFile, cert: certs[0], key: signer}, nil
}

// Configure points the API server's --client-ca-file at the signing CA, written already.
func (a *signingCAAuthn) Configure(_ string, args *envtest.Arguments) error {
	args.Set("client-ca-file", a.certFile)
	return nil
}

func (a *signingCAAuthn) Start() error { return nil }
func (a *signingCAAuthn) Stop() error  { return nil }

// AddUser returns baseCfg with a client certificate for the user (CN the name, O the groups),
// as envtest's CertAuthn.
func (a *signingCAAuthn) AddUser(user envtest.User, baseCfg *rest.Config) (*rest.Config, error) {
	certPEM, keyPEM, err := a.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user.Name, Organization: user.Groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}

// sign issues the template (subject, names, usages) for a new ECDSA P-256 key, valid for a
// week from a minute ago; it returns the certificate's and the key's PEM.
func (a *signingCAAuthn) sign(template *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if template.SerialNumber, err = rand.Int(rand.Reader, big.NewInt(math.MaxInt64)); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template.NotBefore, template.NotAfter = now.Add(-time.Minute), now.Add(7*24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	certPEM, err = certutil.EncodeCertificates(cert)
	return certPEM, keyPEM, err
}
