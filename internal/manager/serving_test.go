package manager

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apihealthz "k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kcm/kcm/internal/options"
)

// One family in each registry kcm's /metrics gathers.
var (
	ctrlFamily = prometheus.NewCounter(prometheus.CounterOpts{Name: "kcm_serving_test_controller_runtime_total"})
	// legacyregistry only exports a family once it has a sample.
	legacyFamily = metrics.NewCounter(&metrics.CounterOpts{Name: "kcm_serving_test_legacy_total"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(ctrlFamily)
	legacyregistry.MustRegister(legacyFamily)
	legacyFamily.Inc()
}

// securePortHandler is the secure port's handler for args, outside any cluster: no
// authentication-kubeconfig, so every request is anonymous and only the always-allowed
// paths pass authorization, as upstream's.
func securePortHandler(t *testing.T, pages func(*mux.PathRecorderMux), args ...string) http.Handler {
	t.Helper()
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // never the in-cluster configuration
	s, err := newSecureServing(listeningOptions(t, args...))
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Fatal("no secure port on a listener")
	}
	return s.handler(newHealth(apihealthz.NamedCheck("deployment-controller", func(*http.Request) error { return nil })), pages)
}

// listeningOptions parses args; the secure port listens on a port of the test's, closed after
// it (the options listen as they are applied, as upstream's).
func listeningOptions(t *testing.T, args ...string) *options.Options {
	t.Helper()
	opts := options.New()
	if err := opts.Parse(args); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	opts.SecureServing.Listener = l
	return opts
}

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestSecurePortServesMergedMetrics(t *testing.T) {
	h := securePortHandler(t, nil, "--authorization-always-allow-paths=/healthz,/metrics")
	code, body := get(t, h, http.MethodGet, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, family := range []string{"kcm_serving_test_controller_runtime_total", "kcm_serving_test_legacy_total"} {
		if !strings.Contains(body, "\n# TYPE "+family+" counter\n") {
			t.Errorf("/metrics lacks %s", family)
		}
	}
}

func TestSecurePortPaths(t *testing.T) {
	allowAll := "--authorization-always-allow-paths=/healthz,/healthz/*,/metrics,/configz,/debug/*,/extra"
	pages := func(m *mux.PathRecorderMux) {
		m.HandleFunc("/extra", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "extra page") })
	}
	tests := []struct {
		name         string
		args         []string
		method, path string
		wantCode     int
		wantBody     string
	}{
		{"healthz open by default", nil, "GET", "/healthz", 200, "ok"},
		{"verbose healthz names the checks", nil, "GET", "/healthz?verbose", 200, "[+]deployment-controller ok\nhealthz check passed\n"},
		{"one check, when allowed", []string{allowAll}, "GET", "/healthz/deployment-controller", 200, "ok"},
		{"no readyz, as upstream", nil, "GET", "/readyz", 404, ""},
		{"metrics refused to anonymous by default", nil, "GET", "/metrics", 403, ""},
		{"pprof with default --profiling", []string{allowAll}, "GET", "/debug/pprof/", 200, "Types of profiles available"},
		{"no pprof with --profiling=false", []string{allowAll, "--profiling=false"}, "GET", "/debug/pprof/", 404, ""},
		{"no flags/v with --profiling=false", []string{allowAll, "--profiling=false"}, "PUT", "/debug/flags/v", 404, ""},
		{"configz served", []string{allowAll}, "GET", "/configz", 200, "{"},
		{"pages added by AddPages", []string{allowAll}, "GET", "/extra", 200, "extra page"},
		{"added pages behind authorization", nil, "GET", "/extra", 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, securePortHandler(t, pages, tt.args...), tt.method, tt.path)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%s %s: %d %q; want %d containing %q", tt.method, tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestNoSecurePort(t *testing.T) {
	opts := options.New()
	if err := opts.Parse([]string{"--secure-port=0"}); err != nil {
		t.Fatal(err)
	}
	if s, err := newSecureServing(opts); err != nil || s != nil {
		t.Errorf("--secure-port=0: %v, %v; want nothing served", s, err)
	}
}

func TestCertificateWithoutKeyFailsStart(t *testing.T) {
	opts := listeningOptions(t, "--tls-cert-file="+t.TempDir()+"/tls.crt")
	if _, err := newSecureServing(opts); err == nil {
		t.Error("--tls-cert-file without --tls-private-key-file: served; want a startup error, as upstream")
	} else {
		t.Log(err)
	}
}
