package features

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/component-base/featuregate"
)

// versionedRecorder collects client-go's versioned gates as upstream's binary registers them.
type versionedRecorder map[clientfeatures.Feature]clientfeatures.VersionedSpecs

func (r versionedRecorder) AddVersioned(in map[clientfeatures.Feature]clientfeatures.VersionedSpecs) error {
	for k, v := range in {
		r[k] = v
	}
	return nil
}

// Every client-go gate is in the generated gates, with client-go's own specs, so that
// ServeClientGo answers each of them as upstream's binary does.
func TestClientGoGatesAreGenerated(t *testing.T) {
	rec := versionedRecorder{}
	if err := clientfeatures.AddVersionedFeaturesToExistingFeatureGates(rec); err != nil {
		t.Fatal(err)
	}
	if len(rec) == 0 {
		t.Fatal("client-go registered no gate")
	}
	specs := upstreamSpecs()
	for name, versions := range rec {
		got, ok := specs[featuregate.Feature(name)]
		if !ok {
			t.Errorf("client-go gate %s is not generated", name)
			continue
		}
		if len(got) != len(versions) {
			t.Errorf("%s: %d versioned specs, client-go has %d", name, len(got), len(versions))
			continue
		}
		for i, v := range versions {
			if got[i].Default != v.Default || got[i].LockToDefault != v.LockToDefault ||
				string(got[i].PreRelease) != string(v.PreRelease) || got[i].Version.String() != v.Version.String() {
				t.Errorf("%s: spec %d is %+v, client-go's %+v", name, i, got[i], v)
			}
		}
	}
}

// Once served, client-go's gates follow --feature-gates.
func TestServeClientGo(t *testing.T) {
	g := New()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	g.AddFlags(fs)
	if err := fs.Parse([]string{"--feature-gates=WatchListClient=false,ClientsPreferCBOR=true"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(); err != nil {
		t.Fatal(err)
	}
	g.ServeClientGo()
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) || !clientfeatures.FeatureGates().Enabled(clientfeatures.ClientsPreferCBOR) {
		t.Error("client-go's gates do not follow --feature-gates")
	}
}

// ExplicitlySet names the gates --feature-gates sets, with or without the kube: prefix.
func TestExplicitlySet(t *testing.T) {
	g := New()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	g.AddFlags(fs)
	if err := fs.Parse([]string{"--feature-gates=kube:GenericWorkload=true,kube:PodDeletionCost=true"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(g.ExplicitlySet()); got != "[GenericWorkload PodDeletionCost]" {
		t.Errorf("ExplicitlySet = %s", got)
	}
	if cg := ClientGoGates(); !slices.Contains(cg, WatchListClient) || slices.Contains(cg, GenericWorkload) {
		t.Errorf("ClientGoGates = %v", cg)
	}
}
