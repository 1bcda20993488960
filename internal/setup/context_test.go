package setup

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/controller-manager/pkg/clientbuilder"

	"github.com/kcm/kcm/internal/options"
)

// A controller's connection has its own token bucket at its scaled rates and its client name
// in the User-Agent, and leaves the base configuration alone: upstream doubles the garbage
// collector's QPS only ("each object deletion takes two API calls").
func TestScaledRESTConfig(t *testing.T) {
	opts := options.New()
	if err := opts.Parse([]string{"--kube-api-qps=20", "--kube-api-burst=30"}); err != nil {
		t.Fatal(err)
	}
	base := &rest.Config{Host: "https://example", QPS: 5, Burst: 7, UserAgent: "base"}
	root, err := NewContext(nil, opts, base)
	if err != nil {
		t.Fatal(err)
	}
	ctx := root.For(Descriptor{Name: "garbage-collector-controller", ClientName: "generic-garbage-collector"})
	cfg, err := ctx.ScaledRESTConfig(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 40 || cfg.Burst != 30 {
		t.Errorf("QPS, burst = %v, %v; want 40, 30", cfg.QPS, cfg.Burst)
	}
	if cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != 40 {
		t.Errorf("rate limiter = %v, want its own at 40 QPS", cfg.RateLimiter)
	}
	if !strings.HasSuffix(cfg.UserAgent, "/generic-garbage-collector") || cfg.Host != "https://example" {
		t.Errorf("user agent, host = %q, %q", cfg.UserAgent, cfg.Host)
	}
	if base.QPS != 5 || base.RateLimiter != nil || base.UserAgent != "base" {
		t.Error("the base configuration was changed")
	}
	if one, _ := ctx.RESTConfig(); one.QPS != 20 || one.Burst != 30 || one.RateLimiter == cfg.RateLimiter {
		t.Errorf("RESTConfig: QPS %v burst %v, want 20, 30 and a bucket of its own", one.QPS, one.Burst)
	}
}

// --kube-api-qps and --kube-api-burst mean what upstream's client-go makes of them: 0 is
// client-go's default (5 QPS, a burst of 10), a negative QPS no limit at all, which is how an
// operator runs upstream unthrottled (issue 24's pods/s goal is for that).
func TestRESTConfigRateAsClientGo(t *testing.T) {
	for _, tt := range []struct {
		args           []string
		gcQPS, wantQPS float32
		wantBurst      int
		wantLimiterQPS float32 // 0: no limiter
	}{
		{args: []string{"--kube-api-qps=-1"}, gcQPS: 2, wantQPS: -2, wantBurst: 30},
		{args: []string{"--kube-api-qps=0", "--kube-api-burst=0"}, gcQPS: 2, wantQPS: rest.DefaultQPS, wantBurst: rest.DefaultBurst, wantLimiterQPS: rest.DefaultQPS},
		{args: []string{"--kube-api-qps=50", "--kube-api-burst=0"}, gcQPS: 1, wantQPS: 50, wantBurst: rest.DefaultBurst, wantLimiterQPS: 50},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			opts := options.New()
			if err := opts.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			root, err := NewContext(nil, opts, &rest.Config{Host: "https://example"})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := root.For(Descriptor{Name: "x-controller", ClientName: "x"}).ScaledRESTConfig(tt.gcQPS, 1)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.QPS != tt.wantQPS || cfg.Burst != tt.wantBurst {
				t.Errorf("QPS, burst = %v, %v; want %v, %v", cfg.QPS, cfg.Burst, tt.wantQPS, tt.wantBurst)
			}
			switch {
			case tt.wantLimiterQPS == 0 && cfg.RateLimiter != nil:
				t.Errorf("rate limiter at %v QPS, want none", cfg.RateLimiter.QPS())
			case tt.wantLimiterQPS != 0 && (cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != tt.wantLimiterQPS):
				t.Errorf("rate limiter = %v, want one at %v QPS", cfg.RateLimiter, tt.wantLimiterQPS)
			}
			// A client built from it: without a limiter, client-go adds none either.
			cfg.GroupVersion, cfg.NegotiatedSerializer = &corev1.SchemeGroupVersion, scheme.Codecs.WithoutConversion()
			rc, err := rest.RESTClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := rc.GetRateLimiter(); (got == nil) != (tt.wantLimiterQPS == 0) {
				t.Errorf("client's rate limiter = %v", got)
			}
		})
	}
}

type fakeReconciler struct{ period int }

// Overrides reach the reconciler of their controller only, and one that nothing applies is
// an error rather than a silently untested suite.
func TestOverrides(t *testing.T) {
	root, err := NewContext(nil, options.New(), &rest.Config{},
		OverrideFor("a-controller", func(r *fakeReconciler) { r.period = 1 }))
	if err != nil {
		t.Fatal(err)
	}
	var b fakeReconciler
	Apply(root.For(Descriptor{Name: "b-controller"}), &b)
	if b.period != 0 {
		t.Errorf("b-controller got a-controller's override")
	}
	if err := root.unapplied(); err == nil {
		t.Errorf("an override nothing applied is not reported")
	}
	var a fakeReconciler
	Apply(root.For(Descriptor{Name: "a-controller"}), &a)
	if a.period != 1 {
		t.Errorf("a-controller's override not applied")
	}
	if err := root.unapplied(); err != nil {
		t.Errorf("unapplied after Apply: %v", err)
	}
}

// stubCredentials hands out a copy of one configuration for any ServiceAccount.
type stubCredentials struct {
	clientbuilder.ControllerClientBuilder
	base *rest.Config
}

func (s stubCredentials) Config(string) (*rest.Config, error) { return rest.CopyConfig(s.base), nil }

// Upstream's client builder ends the User-Agent with the ServiceAccount's username when a
// controller uses its own credentials, and with the bare client name otherwise; a controller
// marked RootCredentials keeps the manager's identity and the bare name.
func TestUserAgentNamesTheIdentity(t *testing.T) {
	base := &rest.Config{Host: "https://example"}
	root, err := NewContext(nil, options.New(), base)
	if err != nil {
		t.Fatal(err)
	}
	bare := root.For(Descriptor{Name: "replicaset-controller", ClientName: "replicaset-controller"})
	if cfg, _ := bare.RESTConfig(); !strings.HasSuffix(cfg.UserAgent, " kubernetes/kcm/replicaset-controller") {
		t.Errorf("without service account credentials: %q", cfg.UserAgent)
	}
	root.credentials = stubCredentials{base: base}
	own := root.For(Descriptor{Name: "replicaset-controller", ClientName: "replicaset-controller"})
	if cfg, _ := own.RESTConfig(); !strings.HasSuffix(cfg.UserAgent, "/system:serviceaccount:kube-system:replicaset-controller") {
		t.Errorf("with service account credentials: %q", cfg.UserAgent)
	}
	rootCreds := root.For(Descriptor{Name: "x-controller", ClientName: "x", RootCredentials: true})
	if cfg, _ := rootCreds.RESTConfig(); !strings.HasSuffix(cfg.UserAgent, " kubernetes/kcm/x") {
		t.Errorf("with root credentials: %q", cfg.UserAgent)
	}
}
