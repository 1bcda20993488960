package manager

import "testing"

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
