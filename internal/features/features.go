// Package features is kcm's --feature-gates: upstream kube-controller-manager v1.37.1's
// feature gates (zz_generated.features.go, one constant per gate, generated from upstream's
// binary by `make upstream-flags`), held in a k8s.io/component-base featuregate and parsed
// through component-base's ComponentGlobalsRegistry as upstream parses them. The syntax
// (A=true,B=false or kube:A=true, the flag repeatable), the defaults at the emulated version,
// locked gates, dependencies between gates and every error message are therefore
// upstream's by construction. --emulated-version and --min-compatibility-version are the
// registry's too, and move the defaults as they do upstream.
package features

import (
	"slices"

	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
)

// binaryVersion is the upstream release whose gates kcm has. Like upstream's, the emulated
// version may go back three minor releases, to 1.34.
var binaryVersion = version.MustParse("1.37.1")

// Gates is kcm's feature gate and the registry that parses the flags setting it.
type Gates struct {
	gate     featuregate.MutableVersionedFeatureGate
	registry compatibility.ComponentGlobalsRegistry
}

// New returns upstream's gates at their defaults for emulation version 1.37.
func New() *Gates {
	gate := featuregate.NewVersionedFeatureGate(version.MajorMinor(binaryVersion.Major(), binaryVersion.Minor()))
	if err := gate.AddVersioned(upstreamSpecs()); err != nil {
		panic(fmt.Sprintf("generated feature gates: %v", err))
	}
	if err := gate.AddDependencies(upstreamDependencies()); err != nil {
		panic(fmt.Sprintf("generated feature gate dependencies: %v", err))
	}
	floor := binaryVersion.WithPatch(0).SubtractMinor(3)
	effective := compatibility.NewEffectiveVersion(binaryVersion, false, floor, floor)
	registry := compatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(compatibility.DefaultKubeComponent, effective, gate); err != nil {
		panic(err)
	}
	return &Gates{gate: gate, registry: registry}
}

// AddFlags adds upstream's --feature-gates, --emulated-version and --min-compatibility-version,
// with upstream's help (which lists every gate not yet GA).
func (g *Gates) AddFlags(fs *pflag.FlagSet) { g.registry.AddFlags(fs) }

// Set applies the parsed flags to the gate, as upstream does right after parsing: an unknown
// gate, a value that is not a bool, a locked gate set away from its default or an enabled gate
// whose dependency is off is an error with upstream's message.
func (g *Gates) Set() error { return g.registry.Set() }

// Validate checks what Set cannot reject alone (the emulated version's range), as upstream's
// option validation does.
func (g *Gates) Validate() []error { return g.registry.Validate() }

// Enabled reports whether a gate is on.
func (g *Gates) Enabled(f featuregate.Feature) bool { return g.gate.Enabled(f) }

// Gate is the feature gate, for libraries that take one.
func (g *Gates) Gate() featuregate.FeatureGate { return g.gate }

// EffectiveVersion is the binary and emulation version --emulated-version sets, for /statusz.
func (g *Gates) EffectiveVersion() compatibility.EffectiveVersion {
	return g.registry.EffectiveVersionFor(compatibility.DefaultKubeComponent)
}

// AddMetrics records kubernetes_feature_enabled{name,stage} for every gate and
// version_info{component,binary,emulation,min_compat} in component-base's legacy registry, as
// upstream's kube-controller-manager does once at startup (the gate's AddMetrics, then the
// ComponentGlobalsRegistry's).
func (g *Gates) AddMetrics() {
	g.gate.AddMetrics()
	g.registry.AddMetrics()
}

// ExplicitlySet lists, sorted, the gates --feature-gates names (AllAlpha and AllBeta aside).
func (g *Gates) ExplicitlySet() []featuregate.Feature {
	var set []featuregate.Feature
	for f := range upstreamSpecs() {
		if g.gate.ExplicitlySet(f) {
			set = append(set, f)
		}
	}
	slices.Sort(set)
	return set
}
