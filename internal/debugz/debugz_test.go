package debugz

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	apihealthz "k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/component-base/compatibility"
	componentbaseconfig "k8s.io/component-base/config"
	cmapp "k8s.io/controller-manager/app"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/options"
	kcmversion "github.com/kcm/kcm/internal/version"
)

// server is the secure port's mux as upstream's Run builds it (NewBaseHandler, then Install),
// without authentication in front, for a command line; its /healthz has one check, named
// check, that fails while failing is set.
type server struct {
	*httptest.Server
	check   string
	failing atomic.Bool
}

func newServer(t *testing.T, check string, args ...string) *server {
	t.Helper()
	opts := options.New()
	if err := opts.FlagSet().Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := opts.FeatureGates.Set(); err != nil {
		t.Fatal(err)
	}
	s := &server{check: check}
	health := controllerhealthz.NewMutableHealthzHandler(apihealthz.NamedCheck(check, func(*http.Request) error {
		if s.failing.Load() {
			return errors.New("wedged")
		}
		return nil
	}))
	m := cmapp.NewBaseHandler(&componentbaseconfig.DebuggingConfiguration{EnableProfiling: true}, health)
	if err := RegisterConfigz(opts, controller.Registry()); err != nil {
		t.Fatal(err)
	}
	Install(m, opts)
	s.Server = httptest.NewServer(m)
	t.Cleanup(s.Close)
	return s
}

// get returns the status, content type and body of GET path with the Accept header given.
func (s *server) get(t *testing.T, path, accept string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

const (
	flagzJSON   = "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"
	statuszJSON = "application/json;g=config.k8s.io;v=v1beta1;as=Statusz"
)

// TestFlagzAsUpstream compares kcm's /flagz with upstream's for the same command line
// (recorded from upstream's binary): every flag upstream lists, with the value it shows.
func TestFlagzAsUpstream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "upstream-flagz.json"))
	if err != nil {
		t.Fatal(err)
	}
	var upstream struct {
		Args  []string          `json:"args"`
		Flags map[string]string `json:"flags"`
	}
	if err := json.Unmarshal(data, &upstream); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, "flagz-check", upstream.Args...)

	code, ctype, body := s.get(t, "/flagz", flagzJSON)
	if code != http.StatusOK || ctype != flagzJSON {
		t.Fatalf("/flagz as JSON: %d %s\n%s", code, ctype, body)
	}
	var got struct {
		Kind     string            `json:"kind"`
		Metadata map[string]any    `json:"metadata"`
		Flags    map[string]string `json:"flags"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Flagz" || got.Metadata["name"] != "kube-controller-manager" {
		t.Errorf("kind %q, metadata %v", got.Kind, got.Metadata)
	}
	// kcm also has cloud-controller-manager's flags for the cloud loops it runs.
	for _, name := range options.CloudFlagNames() {
		if _, ok := got.Flags[name]; !ok {
			t.Errorf("/flagz lacks --%s", name)
		}
		delete(got.Flags, name)
	}
	// And its own flags, which upstream does not have.
	for _, name := range options.OwnFlagNames() {
		if _, ok := got.Flags[name]; !ok {
			t.Errorf("/flagz lacks kcm's own --%s", name)
		}
		delete(got.Flags, name)
	}
	if diffs := mapDiff(upstream.Flags, got.Flags); len(diffs) > 0 {
		t.Errorf("kcm's /flagz differs from upstream's for %q:\n  %s", upstream.Args, strings.Join(diffs, "\n  "))
	}

	// The text page: upstream's header, one flag a line with a separator chosen at random.
	code, ctype, body = s.get(t, "/flagz", "")
	if code != http.StatusOK || ctype != "text/plain; charset=utf-8" {
		t.Fatalf("/flagz: %d %s", code, ctype)
	}
	if !strings.HasPrefix(body, "\nkube-controller-manager flagz\nWarning: This endpoint is not meant to be machine parseable") {
		t.Errorf("/flagz header:\n%s", body)
	}
	if !regexp.MustCompile(`(?m)^node-monitor-grace-period(:|: |=| )1m0s$`).MatchString(body) {
		t.Errorf("/flagz does not list --node-monitor-grace-period=60s as 1m0s:\n%s", body)
	}
}

// mapDiff lists, sorted, the keys whose values differ.
func mapDiff(want, got map[string]string) []string {
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: upstream %q, kcm has no such flag", k, w))
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("%s: upstream %q, kcm %q", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: not upstream's, kcm %q", k, g))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// TestCanonical: values kcm only accepts (held as given) print as upstream's typed flags print.
func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		typ, text, want string
	}{
		{"duration", "60s", "1m0s"},
		{"duration", "soon", "soon"},
		{"int32", "010", "8"},
		{"int", "0x10", "16"},
		{"float32", "0.10", "0.1"},
		{"float64", "1e-1", "0.1"},
		{"bool", "1", "true"},
		{"stringSlice", "a,b", "[a,b]"},
		{"stringSlice", "[a,b]", "[a,b]"},
		{"stringToString", "a=b", "[a=b]"},
		{"string", "as given", "as given"},
	} {
		if got := canonical(textValue{tc.typ, tc.text}); got != tc.want {
			t.Errorf("canonical(%s %q) = %q, want %q", tc.typ, tc.text, got, tc.want)
		}
	}
}

type textValue struct{ typ, text string }

func (v textValue) String() string     { return v.text }
func (v textValue) Set(s string) error { return nil }
func (v textValue) Type() string       { return v.typ }

// TestStatusz: upstream's page, naming kcm's version as the binary's, the emulation version
// of --emulated-version, and the paths listed before it (the base handler's and /flagz).
func TestStatusz(t *testing.T) {
	s := newServer(t, "statusz-check", "--emulated-version=1.36")
	code, ctype, body := s.get(t, "/statusz", statuszJSON)
	if code != http.StatusOK || ctype != statuszJSON {
		t.Fatalf("/statusz as JSON: %d %s\n%s", code, ctype, body)
	}
	var got struct {
		Kind             string   `json:"kind"`
		BinaryVersion    string   `json:"binaryVersion"`
		EmulationVersion string   `json:"emulationVersion"`
		Paths            []string `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := version.MustParse(kcmversion.Get()).String()
	if got.Kind != "Statusz" || got.BinaryVersion != want || got.EmulationVersion != "1.36" {
		t.Errorf("kind %q, binary version %q, emulation version %q; want Statusz, %q, 1.36", got.Kind, got.BinaryVersion, got.EmulationVersion, want)
	}
	// Upstream's binary lists exactly these (/debug is left out as not a status page).
	if wantPaths := []string{"/configz", "/flagz", "/healthz", "/metrics"}; !reflect.DeepEqual(got.Paths, wantPaths) {
		t.Errorf("paths %q, want %q", got.Paths, wantPaths)
	}

	code, ctype, body = s.get(t, "/statusz", "")
	if code != http.StatusOK || ctype != "text/plain; charset=utf-8" {
		t.Fatalf("/statusz: %d %s", code, ctype)
	}
	// Upstream separates names from values at random: ":", ": ", "=" or " ", then a space.
	const sep = `(:|: |=| ) `
	for _, line := range []string{`^kube-controller-manager statusz$`, `^Binary version` + sep + regexp.QuoteMeta(want) + `$`, `^Paths` + sep + `/configz /flagz /healthz /metrics$`} {
		if !regexp.MustCompile(`(?m)` + line).MatchString(body) {
			t.Errorf("/statusz has no line %s:\n%s", line, body)
		}
	}
}

func TestBinaryVersion(t *testing.T) {
	effective := compatibility.NewEffectiveVersionFromString("1.37.1", "", "")
	for kcm, want := range map[string]string{
		"v0.3.0":         "0.3.0",
		"v0.3.1-rc.1":    "0.3.1-rc.1",
		"not a version":  "1.37.1",
		"":               "1.37.1",
		"v1.2.3-dirty+x": "1.2.3-dirty+x",
	} {
		if got := (binaryVersion{effective, kcm}).BinaryVersion().String(); got != want {
			t.Errorf("kcm version %q: binary version %q, want %q", kcm, got, want)
		}
	}
}

// TestPagesFollowTheirGates: /flagz and /statusz only with ComponentFlagz and
// ComponentStatusz, whose defaults follow the emulated version (beta and on since 1.36);
// /metrics/slis and /configz always.
func TestPagesFollowTheirGates(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, http.StatusOK},
		{[]string{"--feature-gates=ComponentFlagz=false,ComponentStatusz=false"}, http.StatusNotFound},
		{[]string{"--emulated-version=1.35"}, http.StatusNotFound},
		{[]string{"--emulated-version=1.35", "--feature-gates=ComponentFlagz=true,ComponentStatusz=true"}, http.StatusOK},
	} {
		s := newServer(t, "gates-check", tc.args...)
		for _, path := range []string{"/flagz", "/statusz"} {
			if code, _, _ := s.get(t, path, ""); code != tc.want {
				t.Errorf("%q: %s answered %d, want %d", tc.args, path, code, tc.want)
			}
		}
		for _, path := range []string{"/metrics/slis", "/configz"} {
			if code, _, _ := s.get(t, path, ""); code != http.StatusOK {
				t.Errorf("%q: %s answered %d", tc.args, path, code)
			}
		}
	}
}

// TestConfigzServed: the base handler's /configz serves RegisterConfigz's configuration under
// upstream's name.
func TestConfigzServed(t *testing.T) {
	s := newServer(t, "configz-check", "--concurrent-gc-syncs=7", "--controllers=*,-ttl")
	code, ctype, body := s.get(t, "/configz", "")
	if code != http.StatusOK || ctype != "application/json" {
		t.Fatalf("/configz: %d %s", code, ctype)
	}
	var got map[string]struct {
		Kind                       string
		Generic                    struct{ Controllers []string }
		GarbageCollectorController struct{ ConcurrentGCSyncs int }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	cfg, ok := got["kubecontrollermanager.config.k8s.io"]
	if !ok || len(got) != 1 {
		t.Fatalf("/configz:\n%s", body)
	}
	if cfg.Kind != "KubeControllerManagerConfiguration" || cfg.GarbageCollectorController.ConcurrentGCSyncs != 7 ||
		!reflect.DeepEqual(cfg.Generic.Controllers, []string{"*", "-ttl-controller"}) {
		t.Errorf("/configz: %+v", cfg)
	}
}

// TestSLIsCountHealthChecks: every /healthz request is recorded per check on /metrics/slis,
// as the healthz handler of k8s.io/apiserver records it behind upstream's and kcm's /healthz.
func TestSLIsCountHealthChecks(t *testing.T) {
	s := newServer(t, "slis-check-controller")
	series := func(body, metric, labels string) string {
		m := regexp.MustCompile(`(?m)^` + metric + `\{` + labels + `\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return "none"
		}
		return m[1]
	}
	const success = `name="slis-check-controller",status="success",type="healthz"`
	const failure = `name="slis-check-controller",status="error",type="healthz"`
	const gauge = `name="slis-check-controller",type="healthz"`

	for range 2 {
		if code, _, _ := s.get(t, "/healthz", ""); code != http.StatusOK {
			t.Fatalf("/healthz answered %d", code)
		}
	}
	_, ctype, body := s.get(t, "/metrics/slis", "")
	if !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("/metrics/slis content type %q", ctype)
	}
	if got := series(body, "kubernetes_healthchecks_total", success); got != "2" {
		t.Errorf("after two healthy /healthz, kubernetes_healthchecks_total{%s} = %s, want 2:\n%s", success, got, body)
	}
	if got := series(body, "kubernetes_healthcheck", gauge); got != "1" {
		t.Errorf("kubernetes_healthcheck{%s} = %s, want 1", gauge, got)
	}

	s.failing.Store(true)
	if code, _, _ := s.get(t, "/healthz", ""); code != http.StatusInternalServerError {
		t.Fatalf("/healthz with a failing check answered %d", code)
	}
	_, _, body = s.get(t, "/metrics/slis", "")
	if got := series(body, "kubernetes_healthchecks_total", failure); got != "1" {
		t.Errorf("after a failing /healthz, kubernetes_healthchecks_total{%s} = %s, want 1:\n%s", failure, got, body)
	}
	if got := series(body, "kubernetes_healthcheck", gauge); got != "0" {
		t.Errorf("kubernetes_healthcheck{%s} = %s, want 0", gauge, got)
	}
}
