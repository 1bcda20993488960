package manager

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kcm/kcm/internal/options"
)

func TestRESTConfigSilencesAPIWarnings(t *testing.T) {
	cfg := RESTConfig(&rest.Config{Host: "https://example"}, options.New())
	if _, ok := cfg.WarningHandlerWithContext.(rest.NoWarnings); !ok || cfg.WarningHandler != nil {
		t.Errorf("warning handlers: %T, %T; want rest.NoWarnings, as upstream", cfg.WarningHandlerWithContext, cfg.WarningHandler)
	}
}

func TestRESTConfigWithoutCompression(t *testing.T) {
	cfg := RESTConfig(&rest.Config{Host: "https://example"}, options.New())
	if !cfg.DisableCompression {
		t.Errorf("DisableCompression = false; upstream's kube-controller-manager asks for uncompressed responses")
	}
	if anon := rest.AnonymousClientConfig(cfg); !anon.DisableCompression {
		t.Errorf("the per-controller credentials' base config compresses")
	}
}
