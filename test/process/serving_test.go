//go:build linux

package process_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

var _ = Describe("The secure port", func() {
	It("serves /healthz to anyone, no /readyz or /livez, and metrics to no anonymous client", func() {
		port := freePort()
		_, connection := kubeadmConnection()
		p := startKCM("kcm", append(connection, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
		get := func(path string) func() (string, error) {
			return func() (string, error) { return answer(port, nil, "", http.MethodGet, path, "") }
		}
		Eventually(get("/healthz")).WithTimeout(30*time.Second).Should(Equal("200 ok"), "kcm: %s", p.State())
		// As upstream kube-controller-manager: no /readyz, no /livez.
		Expect(get("/readyz")()).To(HavePrefix("404 "))
		Expect(get("/livez")()).To(HavePrefix("404 "))
		Expect(get("/metrics")()).To(HavePrefix("403 "), "/metrics for system:anonymous")
	})

	It("authenticates x509 scrapers and bearer tokens, authorizes through SubjectAccessReview, and answers as upstream", func() {
		dir := GinkgoT().TempDir()
		ca := newTestCA()
		caFile := filepath.Join(dir, "client-ca.crt")
		Expect(os.WriteFile(caFile, ca.pem, 0o600)).To(Succeed())
		stranger := newTestCA() // a CA kcm does not trust

		// The scrapers' access: upstream's documented ClusterRole for metrics scrapers, plus
		// profiles and verbosity, bound to an x509 user and a ServiceAccount.
		ns := newNamespace(env.Client)
		ctx := context.Background()
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-serving-scraper-"},
			Rules: []rbacv1.PolicyRule{
				{NonResourceURLs: []string{"/metrics", "/debug/pprof/*", "/configz", "/flagz", "/statusz", "/metrics/slis"}, Verbs: []string{"get"}},
				{NonResourceURLs: []string{"/debug/flags/v"}, Verbs: []string{"put"}},
			},
		}
		Expect(env.Client.Create(ctx, role)).To(Succeed())
		DeferCleanup(env.Client.Delete, context.Background(), role)
		scraperUser := "scraper-" + ns
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-serving-scraper-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: scraperUser},
				{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"},
			},
		}
		Expect(env.Client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(env.Client.Delete, context.Background(), binding)
		scraperToken, strangerToken := saToken(ns, "scraper"), saToken(ns, "stranger")

		scraperCert := ca.clientCert(scraperUser, "scrapers")
		otherCert := ca.clientCert("someone-"+ns, "scrapers")
		untrustedCert := stranger.clientCert(scraperUser, "scrapers")

		type request struct {
			name         string
			cert         *tls.Certificate
			token        string
			method, path string
			body         string
		}
		requests := []request{
			{name: "x509 scraper, /metrics", cert: &scraperCert, method: "GET", path: "/metrics"},
			{name: "x509 user without a binding, /metrics", cert: &otherCert, method: "GET", path: "/metrics"},
			{name: "x509 certificate of a CA not in --client-ca-file, /metrics", cert: &untrustedCert, method: "GET", path: "/metrics"},
			{name: "bound ServiceAccount's token, /metrics", token: scraperToken, method: "GET", path: "/metrics"},
			{name: "unbound ServiceAccount's token, /metrics", token: strangerToken, method: "GET", path: "/metrics"},
			{name: "invalid token, /metrics", token: "not-a-token", method: "GET", path: "/metrics"},
			{name: "no credentials, /metrics", method: "GET", path: "/metrics"},
			{name: "no credentials, /healthz", method: "GET", path: "/healthz"},
			{name: "x509 scraper, /debug/pprof/ (--profiling defaults to true)", cert: &scraperCert, method: "GET", path: "/debug/pprof/"},
			{name: "unbound ServiceAccount's token, /debug/pprof/", token: strangerToken, method: "GET", path: "/debug/pprof/"},
			{name: "x509 scraper sets the verbosity", cert: &scraperCert, method: "PUT", path: "/debug/flags/v", body: "0"},
			{name: "x509 scraper, /configz", cert: &scraperCert, method: "GET", path: "/configz"},
			{name: "x509 scraper, /flagz", cert: &scraperCert, method: "GET", path: "/flagz"},
			{name: "x509 scraper, /statusz", cert: &scraperCert, method: "GET", path: "/statusz"},
			{name: "x509 scraper, /metrics/slis", cert: &scraperCert, method: "GET", path: "/metrics/slis"},
			{name: "unbound ServiceAccount's token, /configz", token: strangerToken, method: "GET", path: "/configz"},
		}
		want := []string{"200", "403", "401", "200", "403", "401", "403", "200 ok", "200", "403",
			"200 successfully set klog.logging.verbosity to 0\n", "200", "200", "200", "200", "403"}

		// kubeadm's controller-manager.conf connects, authenticates and authorizes, for both.
		conf, connection := kubeadmConnection()
		args := append(connection, "--leader-elect=false", "--bind-address=127.0.0.1", "--controllers=ttl-controller",
			"--authentication-kubeconfig="+conf, "--authorization-kubeconfig="+conf,
			"--client-ca-file="+caFile)
		answers := func(p *process, port int) []string {
			GinkgoHelper()
			Eventually(func() (string, error) { return answer(port, nil, "", "GET", "/healthz", "") }).
				WithTimeout(30*time.Second).Should(Equal("200 ok"), "%s: %s", p.name, p.State())
			var got []string
			for i, r := range requests {
				a, err := answer(port, r.cert, r.token, r.method, r.path, r.body)
				Expect(err).NotTo(HaveOccurred(), "%s: %s", p.name, r.name)
				// The status code, and the body where the expected answer names it.
				if code, _, _ := strings.Cut(want[i], " "); code == want[i] {
					a, _, _ = strings.Cut(a, " ")
				}
				got = append(got, r.name+": "+a)
			}
			return got
		}
		port := freePort()
		p := startKCM("kcm", append(args, "--secure-port="+strconv.Itoa(port))...)
		got := answers(p, port)
		expected := make([]string, len(requests))
		for i, r := range requests {
			expected[i] = r.name + ": " + want[i]
		}
		Expect(got).To(Equal(expected), "kcm: %s", p.State())
		scrape, err := answer(port, &scraperCert, "", "GET", "/metrics", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(scrape).To(ContainSubstring("\n# TYPE kubernetes_feature_enabled gauge\n"), "component-base's families")
		Expect(scrape).To(ContainSubstring("\n# TYPE controller_runtime_reconcile_total counter\n"), "controller-runtime's families")

		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it): not compared with its answers")
		}
		upstreamPort := freePort()
		u := startProcess("upstream", syscall.SIGKILL, bin, append(args, "--secure-port="+strconv.Itoa(upstreamPort))...)
		Expect(answers(u, upstreamPort)).To(Equal(got), "upstream: %s", u.State())
	})

	It("raises the verbosity at runtime through PUT /debug/flags/v", func() {
		dir := GinkgoT().TempDir()
		ca := newTestCA()
		caFile := filepath.Join(dir, "client-ca.crt")
		Expect(os.WriteFile(caFile, ca.pem, 0o600)).To(Succeed())
		// system:masters passes authorization without a SubjectAccessReview (upstream's
		// always-allowed group).
		admin := ca.clientCert("verbosity-admin", "system:masters")

		port := freePort()
		_, connection := kubeadmConnection()
		p := startKCM("kcm", append(connection, "--leader-elect=false", "--bind-address=127.0.0.1", "--controllers=ttl-controller",
			"--secure-port="+strconv.Itoa(port), "--client-ca-file="+caFile)...)
		Eventually(func() (string, error) { return answer(port, nil, "", "GET", "/healthz", "") }).
			WithTimeout(30*time.Second).Should(Equal("200 ok"), "kcm: %s", p.State())
		// k8s.io/apiserver's authorization filter logs each refusal at -v=4.
		refusals := func() int { return strings.Count(p.Output(), `"Forbidden" URI="/metrics"`) }

		Expect(answer(port, nil, "", "GET", "/metrics", "")).To(HavePrefix("403 "), "refused at -v=0")
		Expect(refusals()).To(BeZero(), "kcm: %s", p.State())
		Expect(answer(port, &admin, "", "PUT", "/debug/flags/v", "4")).To(Equal("200 successfully set klog.logging.verbosity to 4\n"))
		Expect(answer(port, nil, "", "GET", "/metrics", "")).To(HavePrefix("403 "), "refused at -v=4")
		Eventually(refusals).WithTimeout(10*time.Second).Should(Equal(1), "kcm: %s", p.State())
	})

	It("refuses handshakes below --tls-min-version, and serves no profiles with --profiling=false", func() {
		port := freePort()
		_, connection := kubeadmConnection()
		p := startKCM("kcm", append(connection, "--leader-elect=false", "--bind-address=127.0.0.1", "--controllers=ttl-controller",
			"--secure-port="+strconv.Itoa(port), "--tls-min-version=VersionTLS13", "--profiling=false",
			"--authorization-always-allow-paths=/healthz,/debug/*")...)
		Eventually(func() (string, error) { return answer(port, nil, "", "GET", "/healthz", "") }).
			WithTimeout(30*time.Second).Should(Equal("200 ok"), "kcm: %s", p.State())
		_, err := handshake(port, &tls.Config{MaxVersion: tls.VersionTLS12})
		Expect(err).To(MatchError(ContainSubstring("protocol version")), "a TLS 1.2 handshake")
		state, err := handshake(port, &tls.Config{MinVersion: tls.VersionTLS13})
		Expect(err).NotTo(HaveOccurred())
		Expect(state.Version).To(BeEquivalentTo(tls.VersionTLS13))

		// Open to anyone here, so that only --profiling decides.
		Expect(answer(port, nil, "", "GET", "/debug/pprof/", "")).To(HavePrefix("404 "))
		Expect(answer(port, nil, "", "PUT", "/debug/flags/v", "4")).To(HavePrefix("404 "))
	})

	It("serves --tls-cert-file with only --tls-cipher-suites, and re-reads the files when they change", func() {
		dir := GinkgoT().TempDir()
		ca := newTestCA()
		certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		first := ca.servingCert()
		writePair(certFile, keyFile, first)
		port := freePort()
		_, connection := kubeadmConnection()
		p := startKCM("kcm", append(connection, "--leader-elect=false", "--bind-address=127.0.0.1", "--controllers=ttl-controller",
			"--secure-port="+strconv.Itoa(port), "--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
			"--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")...)
		Eventually(func() (string, error) { return answer(port, nil, "", "GET", "/healthz", "") }).
			WithTimeout(30*time.Second).Should(Equal("200 ok"), "kcm: %s", p.State())

		tls12 := func(suite uint16) *tls.Config {
			return &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}}
		}
		_, err := handshake(port, tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384))
		Expect(err).To(MatchError(ContainSubstring("handshake failure")), "a suite not in --tls-cipher-suites")
		state, err := handshake(port, tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256))
		Expect(err).NotTo(HaveOccurred())
		Expect(state.CipherSuite).To(Equal(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256))
		Expect(state.PeerCertificates[0].SerialNumber).To(Equal(first.Leaf.SerialNumber), "the certificate of --tls-cert-file")

		second := ca.servingCert()
		writePair(certFile, keyFile, second)
		Eventually(func() (*big.Int, error) {
			state, err := handshake(port, &tls.Config{})
			if err != nil {
				return nil, err
			}
			return state.PeerCertificates[0].SerialNumber, nil
		}).WithTimeout(30*time.Second).Should(Equal(second.Leaf.SerialNumber), "the rewritten certificate, without a restart")
		Expect(p.Exited()).To(BeFalse())
	})
})

// handshake completes a TLS handshake with the secure port on 127.0.0.1 and returns its state.
func handshake(port int, cfg *tls.Config) (tls.ConnectionState, error) {
	cfg.InsecureSkipVerify = true // verification is not what the specs look at
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

// writePair writes a certificate and its key as PEM files.
func writePair(certFile, keyFile string, cert tls.Certificate) {
	GinkgoHelper()
	pem, err := certutil.EncodeCertificates(cert.Leaf)
	Expect(err).NotTo(HaveOccurred())
	Expect(certutil.WriteCert(certFile, pem)).To(Succeed())
	writeKey(keyFile, cert.PrivateKey)
}

// answer sends one request to the secure port on 127.0.0.1, with a client certificate and a
// bearer token when given, and returns "<status> <body>".
func answer(port int, cert *tls.Certificate, token, method, path, body string) (string, error) {
	cfg := &tls.Config{InsecureSkipVerify: true} // the port's certificate is self-signed
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), strings.NewReader(body))
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, data), err
}

// saToken creates the ServiceAccount namespace/name and returns a token of it.
func saToken(namespace, name string) string {
	GinkgoHelper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	Expect(env.Client.Create(ctx, sa)).To(Succeed())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}

// testCA is a certificate authority of a spec's own.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA() *testCA {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "kcm-serving-test-ca"}, key)
	Expect(err).NotTo(HaveOccurred())
	pem, err := certutil.EncodeCertificates(cert)
	Expect(err).NotTo(HaveOccurred())
	return &testCA{cert: cert, key: key, pem: pem}
}

// sign returns a certificate for tmpl signed by the CA, with a new key.
func (ca *testCA) sign(tmpl *x509.Certificate) tls.Certificate {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	Expect(err).NotTo(HaveOccurred())
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	Expect(err).NotTo(HaveOccurred())
	leaf, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// clientCert is an x509 client certificate for user in group: the CN and O upstream's x509
// authenticator reads.
func (ca *testCA) clientCert(user, group string) tls.Certificate {
	return ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: []string{group}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// servingCert is a serving certificate for 127.0.0.1 and localhost.
func (ca *testCA) servingCert() tls.Certificate {
	return ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// freePort returns a TCP port on 127.0.0.1 nothing listens on at the moment.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
