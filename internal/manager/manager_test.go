package manager

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kcm/kcm/internal/options"
)

func TestAlwaysAllowed(t *testing.T) {
	paths := []string{"/healthz", "/readyz", "/livez", "/debug/*"}
	tests := map[string]bool{
		"/healthz":      true,
		"/readyz":       true,
		"/livez":        true,
		"/debug/pprof":  true,
		"/metrics":      false,
		"/healthz/ping": false, // exact match only, as upstream
		"/healthzx":     false,
		"/":             false,
	}
	for path, want := range tests {
		if got := AlwaysAllowed(paths, path); got != want {
			t.Errorf("AlwaysAllowed(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestRESTConfigSilencesAPIWarnings(t *testing.T) {
	cfg := RESTConfig(&rest.Config{Host: "https://example"}, options.New())
	if _, ok := cfg.WarningHandlerWithContext.(rest.NoWarnings); !ok || cfg.WarningHandler != nil {
		t.Errorf("warning handlers: %T, %T; want rest.NoWarnings, as upstream", cfg.WarningHandlerWithContext, cfg.WarningHandler)
	}
}
