package setup

import (
	"errors"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	built := func(*Context) error { return nil }
	registry := []Descriptor{
		{Name: "a-controller", Aliases: []string{"a"}, Setup: built},
		{Name: "b-controller", Aliases: []string{"b"}},
		{Name: "off-controller", Aliases: []string{"off"}, DisabledByDefault: true, Setup: built},
	}
	tests := []struct {
		name         string
		controllers  []string
		wantEnabled  string
		wantNotBuilt string
		wantErr      string
	}{
		{name: "star enables the on-by-default", controllers: []string{"*"}, wantEnabled: "a-controller,b-controller", wantNotBuilt: "b-controller"},
		{name: "disable one", controllers: []string{"*", "-a-controller"}, wantEnabled: "b-controller", wantNotBuilt: "b-controller"},
		{name: "disable by alias", controllers: []string{"*", "-a"}, wantEnabled: "b-controller", wantNotBuilt: "b-controller"},
		{name: "enable one disabled by default", controllers: []string{"*", "off"}, wantEnabled: "a-controller,b-controller,off-controller", wantNotBuilt: "b-controller"},
		{name: "no star: only those named", controllers: []string{"a-controller"}, wantEnabled: "a-controller"},
		{name: "only a minus: nothing", controllers: []string{"-a-controller"}},
		{name: "first entry naming a controller decides", controllers: []string{"-a", "a-controller", "*"}, wantEnabled: "b-controller", wantNotBuilt: "b-controller"},
		{name: "first entry decides, enabling", controllers: []string{"a", "-a"}, wantEnabled: "a-controller"},
		{name: "empty list", controllers: nil},
		{name: "unknown", controllers: []string{"*", "bogus"}, wantErr: `unknown controller "bogus"`},
		{name: "unknown negated", controllers: []string{"-bogus"}, wantErr: `"-bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Select(registry, tt.controllers)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var enabled []string
			for _, d := range sel.Enabled {
				enabled = append(enabled, d.Name)
			}
			if got := strings.Join(enabled, ","); got != tt.wantEnabled {
				t.Errorf("enabled = %q, want %q", got, tt.wantEnabled)
			}
			if got := strings.Join(sel.NotBuilt, ","); got != tt.wantNotBuilt {
				t.Errorf("not built = %q, want %q", got, tt.wantNotBuilt)
			}
			if len(sel.Enabled)+len(sel.Disabled) != len(registry) {
				t.Errorf("enabled and disabled do not cover the registry")
			}
		})
	}
}

// TestNotRunning: the one line kcm logs of what does not run for want of a flag. A controller
// off by default is named only when kubeadm turns it on and "*" left it off, not when an
// entry turned it off.
func TestNotRunning(t *testing.T) {
	built := func(*Context) error { return nil }
	registry := []Descriptor{
		{Name: "a-controller", Setup: built},
		{Name: "bootstrap-signer-controller", Aliases: []string{"bootstrapsigner"}, DisabledByDefault: true, KubeadmEnables: true, Setup: built},
		{Name: "token-cleaner-controller", Aliases: []string{"tokencleaner"}, DisabledByDefault: true, KubeadmEnables: true, Setup: built},
		{Name: "selinux-warning-controller", DisabledByDefault: true, Setup: built},
	}
	wanting := map[string]string{"node-ipam-controller": "--allocate-node-cidrs=true and --cluster-cidr"}
	for _, tt := range []struct {
		name        string
		controllers []string
		wanting     map[string]string
		want        string
	}{
		{"kcm's default", []string{"*"}, wanting,
			"bootstrap-signer-controller (--controllers=*,bootstrapsigner); node-ipam-controller (--allocate-node-cidrs=true and --cluster-cidr); token-cleaner-controller (--controllers=*,tokencleaner)"},
		{"kubeadm's list", []string{"*", "bootstrapsigner", "tokencleaner"}, nil, ""},
		{"turned off on purpose", []string{"*", "-bootstrapsigner"}, nil, "token-cleaner-controller (--controllers=*,tokencleaner)"},
		{"no star: nothing is off by default", []string{"a-controller"}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Select(registry, tt.controllers)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(notRunning(tt.wanting, sel.OffByDefault), "; "); got != tt.want {
				t.Errorf("notRunning = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSkippedForIsErrSkipped(t *testing.T) {
	err := SkippedFor("--allocate-node-cidrs=true")
	if !errors.Is(err, ErrSkipped) {
		t.Fatalf("%v is not ErrSkipped", err)
	}
	var s *skipped
	if !errors.As(err, &s) || s.flag != "--allocate-node-cidrs=true" {
		t.Fatalf("%v does not carry its flag", err)
	}
}
