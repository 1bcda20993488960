package garbagecollector

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestClientConfig(t *testing.T) {
	base := &rest.Config{Host: "https://example", QPS: 5, Burst: 7, UserAgent: "base"}
	cfg := ClientConfig(base, 20, 30, "kcm/generic-garbage-collector")
	// Upstream doubles the QPS only ("each object deletion takes two API calls").
	if cfg.QPS != 40 || cfg.Burst != 30 {
		t.Errorf("QPS, burst = %v, %v; want 40, 30", cfg.QPS, cfg.Burst)
	}
	if cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != 40 {
		t.Errorf("rate limiter = %v, want its own at 40 QPS", cfg.RateLimiter)
	}
	if cfg.UserAgent != "kcm/generic-garbage-collector" || cfg.Host != "https://example" {
		t.Errorf("user agent, host = %q, %q", cfg.UserAgent, cfg.Host)
	}
	if base.QPS != 5 || base.RateLimiter != nil || base.UserAgent != "base" {
		t.Error("the base configuration was changed")
	}
}

func TestRequestString(t *testing.T) {
	for req, want := range map[request]string{
		discoverRequest:           "discovery",
		{Op: opDelete, UID: "u1"}: "attemptToDelete u1",
		{Op: opOrphan, UID: "u2"}: "attemptToOrphan u2",
	} {
		if got := req.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", req, got, want)
		}
	}
}
