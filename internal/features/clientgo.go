package features

import (
	"slices"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/component-base/featuregate"
)

// ServeClientGo makes client-go's own feature gates (WatchListClient, InformerResourceVersion,
// ClientsPreferCBOR, ...) answer from these gates, as upstream's binary does: there
// --feature-gates sets them, not client-go's KUBE_FEATURE_* environment variables. Call it
// once, after Set and before any client is built; the gates are process-wide in client-go.
func (g *Gates) ServeClientGo() { clientfeatures.ReplaceFeatureGates(clientGates{g.gate}) }

// clientGates is client-go's view of the gate; upstream registers every client-go gate in
// its gate, so the generated gates hold them all (a test checks).
type clientGates struct{ gate featuregate.FeatureGate }

func (c clientGates) Enabled(f clientfeatures.Feature) bool {
	return c.gate.Enabled(featuregate.Feature(f))
}

// ClientGoGates are the gates client-go reads itself (acted on once ServeClientGo is called).
func ClientGoGates() []featuregate.Feature {
	rec := clientGoRecorder{}
	// client-go only hands over its gates here; it cannot fail.
	_ = clientfeatures.AddVersionedFeaturesToExistingFeatureGates(rec)
	gates := make([]featuregate.Feature, 0, len(rec))
	for f := range rec {
		gates = append(gates, featuregate.Feature(f))
	}
	slices.Sort(gates)
	return gates
}

type clientGoRecorder map[clientfeatures.Feature]bool

func (r clientGoRecorder) AddVersioned(in map[clientfeatures.Feature]clientfeatures.VersionedSpecs) error {
	for f := range in {
		r[f] = true
	}
	return nil
}
