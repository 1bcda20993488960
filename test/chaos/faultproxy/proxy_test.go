package faultproxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kcm/kcm/test/chaos/faultproxy"
)

// echo GETs /echo through the proxy and returns what the backend saw.
func echo(t *testing.T, c *http.Client, p *faultproxy.Proxy, proto string, headers ...string) seen {
	t.Helper()
	resp, err := get(c, p, "/echo", headers...)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Proto != proto {
		t.Fatalf("got %s %s, want %s 200", resp.Proto, resp.Status, proto)
	}
	var s seen
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIdentityIsKept(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	for _, proto := range protocols {
		c := client(t, p, proto)

		s := echo(t, c, p, proto, "User-Agent", "kcm/v1.37.1")
		if s.Cert != clientCN || s.Authorization != "" {
			t.Errorf("%s without Authorization: upstream saw certificate %q, Authorization %q; want %q and none", proto, s.Cert, s.Authorization, clientCN)
		}
		if s.UserAgent != "kcm/v1.37.1 via-faultproxy" {
			t.Errorf("%s: upstream saw User-Agent %q, want it marked", proto, s.UserAgent)
		}

		s = echo(t, c, p, proto, "Authorization", "Bearer sa-token", "User-Agent", "kcm/v1.37.1/deployment-controller")
		if s.Cert != "" || s.Authorization != "Bearer sa-token" {
			t.Errorf("%s with a token: upstream saw certificate %q, Authorization %q; want no certificate and the token", proto, s.Cert, s.Authorization)
		}
		if s.UserAgent != "kcm/v1.37.1/deployment-controller via-faultproxy" {
			t.Errorf("%s: upstream saw User-Agent %q, want it marked", proto, s.UserAgent)
		}
	}
	if got := p.Stats(); got.Requests != 4 || got.Forwarded != 4 || got.ByVerb[faultproxy.VerbGet] != 4 {
		t.Errorf("stats %+v, want 4 GETs forwarded", got)
	}
}

func TestKubeconfigFromAndForKCM(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	dir := t.TempDir()

	// The proxy's kubeconfig has no credentials: the proxy presents the certificate.
	kubeconfig := filepath.Join(dir, "proxy.conf")
	if err := p.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != p.URL() || len(cfg.CertData)+len(cfg.KeyData)+len(cfg.BearerToken) != 0 {
		t.Errorf("kubeconfig: host %q with credentials %v; want %q and none", cfg.Host, len(cfg.CertData) > 0, p.URL())
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/echo").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Cert != clientCN || !strings.HasSuffix(s.UserAgent, faultproxy.UserAgentSuffix) {
		t.Errorf("client-go through the proxy's kubeconfig: upstream saw %+v", s)
	}

	// Options read from a kubeconfig with a client certificate, as controller-manager.conf.
	certPEM, keyPEM := clientCert(t)
	direct := filepath.Join(dir, "controller-manager.conf")
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"k": {Server: backend.URL, CertificateAuthorityData: p.CAPEM()}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"k": {ClientCertificateData: certPEM, ClientKeyData: keyPEM}},
		Contexts:       map[string]*clientcmdapi.Context{"k": {Cluster: "k", AuthInfo: "k"}},
		CurrentContext: "k",
	}, direct); err != nil {
		t.Fatal(err)
	}
	opts, err := faultproxy.OptionsFromKubeconfig(direct)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Upstream.String() != backend.URL || string(opts.ClientCert) != string(certPEM) || string(opts.ClientKey) != string(keyPEM) || string(opts.UpstreamCA) != string(p.CAPEM()) {
		t.Errorf("OptionsFromKubeconfig: %+v", opts)
	}
	if _, err := faultproxy.OptionsFromKubeconfig(kubeconfig); err == nil {
		t.Error("OptionsFromKubeconfig of a kubeconfig without a client certificate: no error")
	}
}

func TestThrottleAnswers429AsPriorityAndFairness(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	p.Set(faultproxy.Fault{Throttle: 1})

	resp, err := get(client(t, p, "HTTP/2.0"), p, "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("got %s with Retry-After %q, want 429 with 1", resp.Status, resp.Header.Get("Retry-After"))
	}

	// client-go reads the Status: TooManyRequests, retry after a second.
	err = kubernetes.NewForConfigOrDie(p.RESTConfig()).CoreV1().RESTClient().Get().
		AbsPath("/api/v1/namespaces/default").MaxRetries(0).Do(context.Background()).Error()
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("client-go error %v, want TooManyRequests", err)
	}
	if delay, ok := apierrors.SuggestsClientDelay(err); !ok || delay != 1 {
		t.Errorf("client-go suggested delay %d (%v), want 1s", delay, ok)
	}
	if got := p.Stats(); got.Requests != 2 || got.Throttled != 2 || got.Forwarded != 0 {
		t.Errorf("stats %+v, want 2 requests, both throttled", got)
	}
}

func TestClientGoRetriesThrottledRequests(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	p.Set(faultproxy.Fault{Throttle: 0.5})
	namespaces := kubernetes.NewForConfigOrDie(p.RESTConfig()).CoreV1().Namespaces()

	// Each throttled try costs client-go a second's wait: stop at the first one retried.
	gets := 0
	for p.Stats().Throttled == 0 && gets < 10 {
		ns, err := namespaces.Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil || ns.Name != "default" {
			t.Fatalf("get through a throttling proxy: %v, %v", ns, err)
		}
		gets++
	}
	if got := p.Stats(); got.Throttled == 0 || got.Forwarded != int64(gets) || got.Requests != got.Forwarded+got.Throttled {
		t.Errorf("stats %+v after %d gets, want a throttled try retried and every get forwarded once", got, gets)
	}
}

func TestServerErrorsAlternate500And503(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	p.Set(faultproxy.Fault{ServerErrors: 1})
	rest := kubernetes.NewForConfigOrDie(p.RESTConfig()).CoreV1().RESTClient()

	err := rest.Get().AbsPath("/api/v1/namespaces/default").MaxRetries(0).Do(context.Background()).Error()
	if !apierrors.IsInternalError(err) {
		t.Errorf("first error %v, want InternalError", err)
	}
	err = rest.Get().AbsPath("/api/v1/namespaces/default").MaxRetries(0).Do(context.Background()).Error()
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("second error %v, want ServiceUnavailable", err)
	}
	if got := p.Stats(); got.ServerErrors != 2 || got.Forwarded != 0 {
		t.Errorf("stats %+v, want 2 server errors", got)
	}
}

func TestResetBreaksTheResponseOff(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	p.Set(faultproxy.Fault{Resets: 1})
	for _, proto := range protocols {
		c := client(t, p, proto)

		// Header and part of the body come, then the connection or stream breaks.
		resp, err := get(c, p, "/big")
		if err != nil {
			t.Fatalf("%s: %v, want the header", proto, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err == nil || len(body) == 0 || len(body) >= 64<<10 {
			t.Errorf("%s: got %s, %d bytes, error %v; want 200, part of 64KiB, an error", proto, resp.Status, len(body), err)
		}
		if proto == "HTTP/1.1" && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: error %v, want an unexpected EOF", proto, err)
		}

		// No body to cut: nothing at all comes. A POST, since Go's client retries a GET
		// whose reused connection closes before the response.
		if resp, err := do(c, http.MethodPost, p, "/empty"); err == nil {
			resp.Body.Close()
			t.Errorf("%s: a reset 204 came as %s, want an error", proto, resp.Status)
		}
	}
	if got := p.Stats(); got.Resets != 4 || got.Forwarded != 4 || got.ByVerb[faultproxy.VerbPost] != 2 {
		t.Errorf("stats %+v, want 4 forwarded and reset, 2 of them POSTs", got)
	}
}

func TestLatencyDelaysRequests(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	c := client(t, p, "HTTP/2.0")
	echo(t, c, p, "HTTP/2.0") // connected before timing

	const latency = 200 * time.Millisecond
	p.Set(faultproxy.Fault{Latency: latency})
	start := time.Now()
	echo(t, c, p, "HTTP/2.0")
	if took := time.Since(start); took < latency {
		t.Errorf("request took %v, want at least %v", took, latency)
	}
}

// stream reads a watch through the proxy, counting the bytes received; done is closed, with
// err set, when the stream ends.
type stream struct {
	bytes atomic.Int64
	done  chan struct{}
	err   error
}

func watch(t *testing.T, c *http.Client, p *faultproxy.Proxy) *stream {
	t.Helper()
	return watchPath(t, c, p, "/api/v1/pods?watch=true")
}

func watchPath(t *testing.T, c *http.Client, p *faultproxy.Proxy, path string) *stream {
	t.Helper()
	resp, err := get(c, p, path)
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadBytes('\n')
			s.bytes.Add(int64(len(line)))
			if err != nil {
				if !errors.Is(err, io.EOF) {
					s.err = err
				}
				return
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close(); <-s.done })
	return s
}

// flowing waits until s receives more bytes than it had, and reports whether it did in time.
func (s *stream) flowing() bool {
	before := s.bytes.Load()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s.bytes.Load() > before {
			return true
		}
	}
	return false
}

// quiet waits until s has received nothing for 200ms (the bytes already on their way when a
// blackhole began), and returns the bytes received.
func (s *stream) quiet() int64 {
	last := s.bytes.Load()
	for quietSince, deadline := time.Now(), time.Now().Add(5*time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := s.bytes.Load(); n != last {
			last, quietSince = n, time.Now()
		} else if time.Since(quietSince) >= 200*time.Millisecond {
			break
		}
	}
	return last
}

// ended waits for the end of s and reports whether it came in time.
func (s *stream) ended() bool {
	select {
	case <-s.done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestCutWatchesEndsStreams(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	for _, proto := range protocols {
		c := client(t, p, proto)
		s := watch(t, c, p)
		if !s.flowing() {
			t.Fatalf("%s: the watch does not flow", proto)
		}
		echo(t, c, p, proto) // a request that is no watch is not cut

		p.CutWatches()
		if !s.ended() || s.err != nil {
			t.Errorf("%s: after CutWatches the stream ended %v with error %v; want a clean end", proto, s.ended(), s.err)
		}
	}

	p.Set(faultproxy.Fault{CutWatchesEvery: 50 * time.Millisecond})
	s := watch(t, client(t, p, "HTTP/2.0"), p)
	if !s.ended() || s.err != nil {
		t.Errorf("with CutWatchesEvery the stream ended %v with error %v; want a clean end", s.ended(), s.err)
	}
	if got := p.Stats(); got.WatchesCut != 3 || got.ByVerb[faultproxy.VerbWatch] != 3 || got.ByVerb[faultproxy.VerbGet] != 2 {
		t.Errorf("stats %+v, want 3 watches, all cut, and 2 GETs", got)
	}
}

func TestBlackholeHoldsRequestsAndFreezesStreams(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	c := client(t, p, "HTTP/2.0")
	s := watch(t, c, p)
	if !s.flowing() {
		t.Fatal("the watch does not flow")
	}

	p.Set(faultproxy.Fault{Blackhole: true})
	held := make(chan error, 1)
	go func() {
		resp, err := get(c, p, "/echo")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				err = errors.New(resp.Status)
			}
		}
		held <- err
	}()
	// Bytes already on their way may still arrive; after that, none.
	frozen := s.quiet()
	select {
	case err := <-held:
		t.Fatalf("a request across the blackhole was answered: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if got := s.bytes.Load(); got != frozen {
		t.Errorf("the watch received %d bytes during the blackhole", got-frozen)
	}

	p.Heal()
	select {
	case err := <-held:
		if err == nil || err.Error() == "200 OK" {
			t.Errorf("the held request ended with %v after the heal, want a broken connection", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the held request was still held after the heal")
	}
	if !s.flowing() {
		t.Error("the watch does not flow again after the heal")
	}
	if got := p.Stats(); got.Held != 1 || got.Forwarded != 1 {
		t.Errorf("stats %+v, want the watch forwarded and the request held", got)
	}
}

func TestWatchCutDuringBlackholeEndsAfterHeal(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	c := client(t, p, "HTTP/1.1")
	// A busy watch is cut with a write frozen, an idle one with none.
	busy, idle := watch(t, c, p), watchPath(t, c, p, "/idle?watch=true")
	if !busy.flowing() {
		t.Fatal("the watch does not flow")
	}
	for idle.bytes.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	p.Set(faultproxy.Fault{Blackhole: true})
	frozen := busy.quiet()

	// Not even the end of a stream crosses the partition.
	p.CutWatches()
	for name, s := range map[string]*stream{"busy": busy, "idle": idle} {
		select {
		case <-s.done:
			t.Fatalf("the %s watch cut during the blackhole ended across it (error %v)", name, s.err)
		case <-time.After(300 * time.Millisecond):
		}
	}
	if got := busy.bytes.Load(); got != frozen {
		t.Errorf("the watch received %d bytes during the blackhole", got-frozen)
	}
	p.Heal()
	for name, s := range map[string]*stream{"busy": busy, "idle": idle} {
		if !s.ended() || s.err != nil {
			t.Errorf("after the heal the cut %s watch ended %v with error %v; want a clean end", name, s.ended(), s.err)
		}
	}
}

func TestCloseEndsHeldRequests(t *testing.T) {
	backend := newBackend(t)
	p := newProxy(t, backend, 1)
	c := client(t, p, "HTTP/1.1")
	s := watch(t, c, p)
	if !s.flowing() {
		t.Fatal("the watch does not flow")
	}
	p.Set(faultproxy.Fault{Blackhole: true})
	held := make(chan error, 1)
	go func() {
		resp, err := get(c, p, "/echo")
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	for p.Stats().Held == 0 {
		time.Sleep(10 * time.Millisecond)
	}

	// Close returns once every handler has: the held one and the frozen watch.
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a request held and a watch frozen")
	}
	if err := <-held; err == nil {
		t.Error("the held request was answered after Close")
	}
	if !s.ended() {
		t.Error("the frozen watch did not end with Close")
	}
}

func TestFractionsFollowTheFaultAndTheSeed(t *testing.T) {
	fault := faultproxy.Fault{Throttle: 0.25, ServerErrors: 0.25, Resets: 0.1}
	run := func() faultproxy.Stats {
		backend := newBackend(t)
		p := newProxy(t, backend, 42)
		p.Set(fault)
		c := client(t, p, "HTTP/2.0")
		var ok, throttled, failed, reset int64
		for range 400 {
			resp, err := get(c, p, "/echo")
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			switch {
			case err != nil:
				reset++
			case resp.StatusCode == http.StatusOK:
				ok++
			case resp.StatusCode == http.StatusTooManyRequests:
				throttled++
			case resp.StatusCode >= 500:
				failed++
			}
		}
		got := p.Stats()
		if got.Requests != 400 || got.Throttled != throttled || got.ServerErrors != failed || got.Resets != reset || got.Forwarded != ok+reset {
			t.Errorf("stats %+v; the client saw %d ok, %d throttled, %d failed, %d reset", got, ok, throttled, failed, reset)
		}
		return got
	}

	got := run()
	for _, c := range []struct {
		name   string
		n      int64
		lo, hi int64
	}{
		{"throttled", got.Throttled, 70, 130},
		{"server errors", got.ServerErrors, 70, 130},
		{"resets", got.Resets, 20, 60},
	} {
		if c.n < c.lo || c.n > c.hi {
			t.Errorf("%s: %d of 400, want %d to %d", c.name, c.n, c.lo, c.hi)
		}
	}
	if again := run(); again.Throttled != got.Throttled || again.ServerErrors != got.ServerErrors || again.Resets != got.Resets {
		t.Errorf("the same seed drew %+v, then %+v", got, again)
	}
}
