package setup

import (
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/options"
)

// A controller runs only when every gate it requires is on, as upstream's BuildController;
// a gated-off controller kcm has not built is not named as enabled-but-not-built either.
func TestGatedOff(t *testing.T) {
	built := func(*Context) error { return nil }
	a := Descriptor{Name: "a-controller", Setup: built}
	gated := Descriptor{Name: "gated-controller", FeatureGates: []featuregate.Feature{"G"}, Setup: built}
	twoGates := Descriptor{Name: "two-controller", FeatureGates: []featuregate.Feature{"G", "H"}, Setup: built}
	unbuilt := Descriptor{Name: "unbuilt-controller", FeatureGates: []featuregate.Feature{"H"}}
	off := Descriptor{Name: "off-controller", Setup: built}
	sel := Selection{Enabled: []Descriptor{a, gated, twoGates, unbuilt}, NotBuilt: []string{"unbuilt-controller"}, Disabled: []Descriptor{off}}
	tests := []struct {
		name                                    string
		on                                      map[featuregate.Feature]bool
		wantEnabled, wantNotBuilt, wantGatedOff string
	}{
		{name: "every gate on", on: map[featuregate.Feature]bool{"G": true, "H": true},
			wantEnabled: "a-controller,gated-controller,two-controller,unbuilt-controller", wantNotBuilt: "unbuilt-controller"},
		{name: "every gate off", on: map[featuregate.Feature]bool{},
			wantEnabled: "a-controller", wantGatedOff: "gated-controller,two-controller,unbuilt-controller"},
		{name: "one of two gates off", on: map[featuregate.Feature]bool{"G": true},
			wantEnabled: "a-controller,gated-controller", wantGatedOff: "two-controller,unbuilt-controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gatedOff := sel.gatedOff(func(f featuregate.Feature) bool { return tt.on[f] })
			if n := names(got.Enabled); n != tt.wantEnabled {
				t.Errorf("enabled = %q, want %q", n, tt.wantEnabled)
			}
			if n := strings.Join(got.NotBuilt, ","); n != tt.wantNotBuilt {
				t.Errorf("not built = %q, want %q", n, tt.wantNotBuilt)
			}
			if n := names(gatedOff); n != tt.wantGatedOff {
				t.Errorf("gated off = %q, want %q", n, tt.wantGatedOff)
			}
			if len(got.Enabled)+len(got.Disabled) != len(sel.Enabled)+len(sel.Disabled) {
				t.Errorf("enabled and disabled do not cover the selection")
			}
		})
	}
}

// Context.Enabled answers what --feature-gates and upstream's defaults say.
func TestContextEnabled(t *testing.T) {
	opts := options.New()
	if err := opts.Parse([]string{"--feature-gates=StatefulSetSemanticRevisionComparison=false,DeploymentReplicaSetTerminatingReplicas=false"}); err != nil {
		t.Fatal(err)
	}
	ctx, err := NewContext(nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for gate, want := range map[featuregate.Feature]bool{
		features.StatefulSetSemanticRevisionComparison:   false, // set off
		features.DeploymentReplicaSetTerminatingReplicas: false, // beta, on by default, set off
		features.SeparateTaintEvictionController:         true,  // GA, default
		features.GenericWorkload:                         false, // beta, off by default
	} {
		if got := ctx.Enabled(gate); got != want {
			t.Errorf("Enabled(%s) = %v, want %v", gate, got, want)
		}
	}
}

func names(ds []Descriptor) string {
	var n []string
	for _, d := range ds {
		n = append(n, d.Name)
	}
	return strings.Join(n, ",")
}

// The startup line names the gates given that nothing acts on: not read by a Setup that ran,
// not required by a controller, not client-go's.
func TestIgnoredGates(t *testing.T) {
	reg := []Descriptor{{Name: "a-controller", FeatureGates: []featuregate.Feature{"Required"}}}
	read := func(f featuregate.Feature) bool { return f == "Read" }
	clientGo := []featuregate.Feature{"WatchListClient"}
	tests := []struct {
		set  []featuregate.Feature
		want string
	}{
		{nil, ""},
		{[]featuregate.Feature{"Read", "Required", "WatchListClient"}, ""},
		{[]featuregate.Feature{"Nobody", "Read", "Unread"}, "Nobody,Unread"},
	}
	for _, tt := range tests {
		if got := strings.Join(ignoredGates(tt.set, read, reg, clientGo), ","); got != tt.want {
			t.Errorf("ignoredGates(%v) = %q, want %q", tt.set, got, tt.want)
		}
	}
}

// Enabled records what it was asked, across the contexts of every controller.
func TestEnabledRecordsReads(t *testing.T) {
	root, err := NewContext(nil, options.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	root.For(Descriptor{Name: "a-controller"}).Enabled(features.PodDeletionCost)
	if !root.gatesRead.has(features.PodDeletionCost) || root.gatesRead.has(features.GenericWorkload) {
		t.Error("the gate read in a controller's Setup is not recorded (or another one is)")
	}
}
