package setup

import (
	"k8s.io/component-base/featuregate"
)

// Enabled reports whether a feature gate is on: --feature-gates, else upstream's default at
// the emulated version. A controller reads each gate it honours in Setup, into a field of its
// Reconciler, so that tests can set the gated behaviour both ways.
func (c *Context) Enabled(f featuregate.Feature) bool { return c.Options.FeatureGates.Enabled(f) }

// gatedOff moves the enabled controllers whose required feature gates are not all on to the
// disabled ones, as upstream's BuildController skips them, and returns them.
func (sel Selection) gatedOff(enabled func(featuregate.Feature) bool) (Selection, []Descriptor) {
	var out Selection
	var off []Descriptor
	out.Disabled = append(out.Disabled, sel.Disabled...)
	for _, d := range sel.Enabled {
		if allEnabled(d.FeatureGates, enabled) {
			out.Enabled = append(out.Enabled, d)
			if !d.Built() {
				out.NotBuilt = append(out.NotBuilt, d.Name)
			}
			continue
		}
		off = append(off, d)
		out.Disabled = append(out.Disabled, d)
	}
	return out, off
}

func allEnabled(gates []featuregate.Feature, enabled func(featuregate.Feature) bool) bool {
	for _, g := range gates {
		if !enabled(g) {
			return false
		}
	}
	return true
}
