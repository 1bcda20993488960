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
