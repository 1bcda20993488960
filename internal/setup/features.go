package setup

import (
	"sync"

	"k8s.io/component-base/featuregate"
)

// Enabled reports whether a feature gate is on: --feature-gates, else upstream's default at
// the emulated version. A controller reads each gate it honours in Setup, into a field of its
// Reconciler, so that tests can set the gated behaviour both ways.
func (c *Context) Enabled(f featuregate.Feature) bool {
	c.gatesRead.mark(f)
	return c.Options.FeatureGates.Enabled(f)
}

// gateReads records the gates read through Context.Enabled, for the startup line naming the
// gates given that nothing acts on.
type gateReads struct {
	mu   sync.Mutex
	read map[featuregate.Feature]bool
}

func (g *gateReads) mark(f featuregate.Feature) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.read == nil {
		g.read = map[featuregate.Feature]bool{}
	}
	g.read[f] = true
}

func (g *gateReads) has(f featuregate.Feature) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.read[f]
}

// ignoredGates lists the gates --feature-gates sets (set) that nothing in kcm acts on: not
// read by a Setup that ran, not required by any controller of reg (those decide whether it
// runs), not client-go's own (clientGo). As for flags, a gate only a controller that does not
// run would read counts as ignored.
func ignoredGates(set []featuregate.Feature, read func(featuregate.Feature) bool, reg []Descriptor, clientGo []featuregate.Feature) []string {
	acted := map[featuregate.Feature]bool{}
	for _, d := range reg {
		for _, g := range d.FeatureGates {
			acted[g] = true
		}
	}
	for _, g := range clientGo {
		acted[g] = true
	}
	var ignored []string
	for _, g := range set {
		if !acted[g] && !read(g) {
			ignored = append(ignored, string(g))
		}
	}
	return ignored
}

// gatedOff moves the enabled controllers whose required feature gates are not all on to the
// disabled ones, as upstream's BuildController skips them, and returns them.
func (sel Selection) gatedOff(enabled func(featuregate.Feature) bool) (Selection, []Descriptor) {
	var out Selection
	var off []Descriptor
	out.Disabled = append(out.Disabled, sel.Disabled...)
	out.OffByDefault = sel.OffByDefault
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
