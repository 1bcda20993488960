package faultproxy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kcm/kcm/test/chaos/faultproxy"
)

// clientCN is the identity the proxy presents upstream, kcm's own.
const clientCN = "system:kube-controller-manager"

// seen is what the backend echoes of a request.
type seen struct {
	// Cert is the Common Name of the client certificate presented, "" for none.
	Cert          string
	Authorization string
	UserAgent     string
}

// newBackend starts a TLS server playing the API server: it asks for (without verifying) a
// client certificate and answers
//   - ?watch=true: a line every 5ms until the request ends; on /idle, one line only;
//   - /big: 64KiB with a Content-Length;
//   - /empty: 204;
//   - /api/v1/namespaces/default: the namespace, as JSON;
//   - anything else: what it saw of the request (seen), as JSON.
func newBackend(t *testing.T) *httptest.Server {
	t.Helper()
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("watch") == "true" && r.URL.Path == "/idle":
			_, _ = fmt.Fprintln(w, `{"line":0}`)
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, "{\"line\":%d}\n", i); err != nil {
					return
				}
				http.NewResponseController(w).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		case r.URL.Path == "/big":
			body := strings.Repeat("x", 64<<10)
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = w.Write([]byte(body))
		case r.URL.Path == "/empty":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/api/v1/namespaces/default":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
		default:
			s := seen{Authorization: r.Header.Get("Authorization"), UserAgent: r.UserAgent()}
			if len(r.TLS.PeerCertificates) > 0 {
				s.Cert = r.TLS.PeerCertificates[0].Subject.CommonName
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(s)
		}
	}))
	backend.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	backend.EnableHTTP2 = true
	backend.StartTLS()
	// Closing the connections first ends the streams a broken proxy would leave open.
	t.Cleanup(func() {
		backend.CloseClientConnections()
		backend.Close()
	})
	return backend
}

// newProxy starts a proxy in front of backend presenting a client certificate of clientCN.
func newProxy(t *testing.T, backend *httptest.Server, seed int64) *faultproxy.Proxy {
	t.Helper()
	certPEM, keyPEM := clientCert(t)
	upstream, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(faultproxy.Options{
		Upstream:   upstream,
		UpstreamCA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw}),
		ClientCert: certPEM,
		ClientKey:  keyPEM,
		Seed:       seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// clientCert makes a self-signed client certificate for clientCN.
func clientCert(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: clientCN},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// protocols are the two the proxy serves, to run a test over each.
var protocols = []string{"HTTP/1.1", "HTTP/2.0"}

// client is an HTTP client of the proxy speaking only proto, with no retries of its own.
func client(t *testing.T, p *faultproxy.Proxy, proto string) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CAPEM()) {
		t.Fatal("no certificate in the proxy's CA")
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: new(http.Protocols)}
	if proto == "HTTP/2.0" {
		transport.Protocols.SetHTTP2(true)
	} else {
		transport.Protocols.SetHTTP1(true)
	}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// get sends a GET to the proxy at path with headers given as name, value pairs.
func get(c *http.Client, p *faultproxy.Proxy, path string, headers ...string) (*http.Response, error) {
	return do(c, http.MethodGet, p, path, headers...)
}

func do(c *http.Client, method string, p *faultproxy.Proxy, path string, headers ...string) (*http.Response, error) {
	req, err := http.NewRequest(method, p.URL()+path, nil)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.Do(req)
}
