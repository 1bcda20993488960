package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// UserAgentSuffix is appended to the User-Agent of every forwarded request, so that the API
// server's audit log (userAgent) tells the requests that came through the proxy.
const UserAgentSuffix = " via-faultproxy"

// Options configure a Proxy.
type Options struct {
	// Upstream is kube-apiserver's URL (https://host:port, no path).
	Upstream *url.URL
	// UpstreamCA is the PEM of the CA that signed the API server's serving certificate.
	UpstreamCA []byte
	// ClientCert and ClientKey (PEM) are the client certificate the proxy presents upstream
	// on requests that carry no Authorization header: kcm's own identity, which the proxy's
	// TLS termination takes from kcm.
	ClientCert, ClientKey []byte
	// Seed seeds the draws that pick the throttled, failed and reset requests.
	Seed int64
	// ErrorLog receives the proxy's and its server's errors (upstream failures, TLS
	// handshakes broken off); nil discards them.
	ErrorLog *log.Logger
}

// OptionsFromKubeconfig reads Options from a kubeconfig with a client certificate, such as
// kubeadm's controller-manager.conf: its server, CA and client certificate and key.
func OptionsFromKubeconfig(path string) (Options, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return Options{}, err
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return Options{}, err
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return Options{}, fmt.Errorf("server of %s: %w", path, err)
	}
	if len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
		return Options{}, fmt.Errorf("%s has no client certificate and key", path)
	}
	return Options{Upstream: upstream, UpstreamCA: cfg.CAData, ClientCert: cfg.CertData, ClientKey: cfg.KeyData}, nil
}

// Proxy is a fault-injecting reverse proxy in front of kube-apiserver. Its methods are safe
// for concurrent use.
type Proxy struct {
	url      string
	caPEM    []byte
	server   *http.Server
	upstream *httputil.ReverseProxy
	// withCert presents the client certificate, anonymous none (see identityTransport).
	withCert, anonymous *http.Transport
	// serving counts the goroutines Close waits for: the server's and the cutter's.
	serving sync.WaitGroup

	mu sync.Mutex
	// handlers counts the handlers in flight; Add only under mu while !closing.
	handlers sync.WaitGroup
	closing  bool
	fault    Fault
	rng      *rand.Rand
	stats    Stats
	// healed is open while the fault is a Blackhole, closed when it is lifted; nil otherwise.
	healed chan struct{}
	// stopCutter ends the goroutine that cuts watches every Fault.CutWatchesEvery.
	stopCutter chan struct{}
	// watches are the watch streams in flight.
	watches map[*watch]struct{}
}

// New starts a proxy for opts.Upstream on 127.0.0.1 on a free port, serving TLS with a
// certificate of a fresh CA (CAPEM). Close stops it.
func New(opts Options) (*Proxy, error) {
	if opts.Upstream == nil {
		return nil, errors.New("faultproxy: no upstream")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(opts.UpstreamCA) {
		return nil, errors.New("faultproxy: no certificate in UpstreamCA")
	}
	clientCert, err := tls.X509KeyPair(opts.ClientCert, opts.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: client certificate: %w", err)
	}
	caPEM, servingCert, err := servingCert()
	if err != nil {
		return nil, fmt.Errorf("faultproxy: serving certificate: %w", err)
	}
	errorLog := opts.ErrorLog
	if errorLog == nil {
		errorLog = log.New(io.Discard, "", 0)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}

	p := &Proxy{
		url:       "https://" + ln.Addr().String(),
		caPEM:     caPEM,
		withCert:  upstreamTransport(roots, []tls.Certificate{clientCert}),
		anonymous: upstreamTransport(roots, nil),
		rng:       rand.New(rand.NewPCG(uint64(opts.Seed), uint64(opts.Seed))),
		stats:     Stats{ByVerb: map[string]int64{}},
		watches:   map[*watch]struct{}{},
	}
	p.upstream = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(opts.Upstream)
			pr.Out.Header.Set("User-Agent", strings.TrimSpace(pr.In.Header.Get("User-Agent")+UserAgentSuffix))
		},
		Transport: identityTransport{withCert: p.withCert, anonymous: p.anonymous},
		// Write every chunk as it comes, so that watch streams flow.
		FlushInterval:  -1,
		ModifyResponse: endCutWatchCleanly,
		ErrorHandler: func(_ http.ResponseWriter, r *http.Request, err error) {
			// An upstream failure reaches the client as a broken connection, as it would
			// talking to the API server directly.
			errorLog.Printf("faultproxy: %s %s: %v", r.Method, r.URL.Path, err)
			panic(http.ErrAbortHandler)
		},
		ErrorLog: errorLog,
	}
	p.server = &http.Server{
		Handler:   p,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{servingCert}, MinVersion: tls.VersionTLS12},
		// kube-apiserver's --http2-max-streams-per-connection: kcm multiplexes all its watches
		// on one connection.
		HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: 1000},
		ErrorLog: errorLog,
	}
	p.serving.Go(func() {
		// ServeTLS offers h2 and http/1.1; it returns ErrServerClosed on Close.
		if err := p.server.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			errorLog.Printf("faultproxy: serving: %v", err)
		}
	})
	return p, nil
}

// upstreamTransport is an HTTP/2-capable transport to the API server trusting roots and
// presenting certs.
func upstreamTransport(roots *x509.CertPool, certs []tls.Certificate) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}
	t.ForceAttemptHTTP2 = true
	return t
}

// identityTransport keeps each request's identity: a request with an Authorization header
// (a controller's ServiceAccount token) goes over a connection without a client certificate,
// since kube-apiserver would authenticate the certificate first; any other (kcm's own
// client) over a connection presenting kcm's certificate.
type identityTransport struct {
	withCert, anonymous http.RoundTripper
}

func (t identityTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return t.anonymous.RoundTrip(r)
	}
	return t.withCert.RoundTrip(r)
}

// URL is the proxy's URL, https://127.0.0.1:<port>.
func (p *Proxy) URL() string { return p.url }

// CAPEM is the PEM of the CA that signed the proxy's serving certificate.
func (p *Proxy) CAPEM() []byte { return p.caPEM }

// RESTConfig is a client configuration for the proxy with no credentials: requests go
// upstream under Options' client certificate unless the caller adds a bearer token.
func (p *Proxy) RESTConfig() *rest.Config {
	return &rest.Config{Host: p.url, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}
}

// WriteKubeconfig writes a kubeconfig for kcm at path: the proxy's URL and CA, and no user
// credentials, since the proxy presents the client certificate itself.
func (p *Proxy) WriteKubeconfig(path string) error {
	return clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"faultproxy": {Server: p.url, CertificateAuthorityData: p.caPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"faultproxy": {}},
		Contexts:       map[string]*clientcmdapi.Context{"faultproxy": {Cluster: "faultproxy", AuthInfo: "faultproxy"}},
		CurrentContext: "faultproxy",
	}, path)
}

// Set replaces the current fault with f; requests arriving from now on follow it. Lifting a
// Blackhole drops the requests it held and lets the frozen responses go on.
func (p *Proxy) Set(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return
	}
	switch {
	case f.Blackhole && p.healed == nil:
		p.healed = make(chan struct{})
	case !f.Blackhole && p.healed != nil:
		close(p.healed)
		p.healed = nil
	}
	if f.CutWatchesEvery != p.fault.CutWatchesEvery {
		p.startCutterLocked(f.CutWatchesEvery)
	}
	p.fault = f
}

// Heal lifts every fault: Set(Fault{}).
func (p *Proxy) Heal() { p.Set(Fault{}) }

// Stats returns the counts since the proxy started or the last ResetStats.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByVerb = make(map[string]int64, len(p.stats.ByVerb))
	for verb, n := range p.stats.ByVerb {
		s.ByVerb[verb] = n
	}
	return s
}

// ResetStats sets every count to zero.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = Stats{ByVerb: map[string]int64{}}
}

// Close stops the proxy: it ends every request in flight (held ones included), closes its
// connections and returns once every handler has returned.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return nil
	}
	p.closing = true
	p.startCutterLocked(0)
	p.mu.Unlock()

	// Closing the connections cancels the requests' contexts, which ends every handler.
	err := p.server.Close()
	p.handlers.Wait()
	p.serving.Wait()
	p.withCert.CloseIdleConnections()
	p.anonymous.CloseIdleConnections()
	return err
}

// enter counts a handler in, unless the proxy is closing.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.handlers.Add(1)
	return true
}

// ServeHTTP decides the request's fate from the current fault, then acts on it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		panic(http.ErrAbortHandler)
	}
	defer p.handlers.Done()
	// The request ends with its client's connection (Close closes them all); the upstream
	// request also when its watch is cut.
	client := r.Context()

	d := p.decide(r)
	if d.action == hold {
		// No answer across a partition; once it heals, the connection it held is broken.
		select {
		case <-d.healed:
		case <-client.Done():
		}
		panic(http.ErrAbortHandler)
	}
	if !sleep(client, d.latency) {
		return // the client is gone
	}
	// From here on nothing crosses a partition that starts: the writes wait for its end.
	fw := newFaultWriter(p, client, w, d.reset)
	switch d.action {
	case throttle:
		writeStatus(fw, tooManyRequests)
		return
	case serverError:
		if d.status == http.StatusServiceUnavailable {
			writeStatus(fw, serviceUnavailable)
		} else {
			writeStatus(fw, internalError)
		}
		return
	}

	ctx, cancel := context.WithCancel(client)
	defer cancel()
	if isWatch(r) {
		var untrack func()
		ctx, untrack = p.trackWatch(ctx, cancel)
		defer untrack()
	}
	p.upstream.ServeHTTP(fw, r.WithContext(ctx))
	// Not even the end of the response (a cut watch's, say) crosses a partition.
	_ = p.waitOpen(client)
	if d.reset {
		fw.abort() // the body ended before it could be cut: break it off at its end
	}
}

// sleep waits d, or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitOpen returns at once unless a Blackhole holds, then when it is lifted or ctx is done.
func (p *Proxy) waitOpen(ctx context.Context) error {
	p.mu.Lock()
	healed := p.healed
	p.mu.Unlock()
	if healed == nil {
		return nil
	}
	select {
	case <-healed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
