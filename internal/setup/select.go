package setup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/convergence"
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/track"
)

// Selection is the outcome of --controllers.
type Selection struct {
	// Enabled are the controllers to run, in registry order.
	Enabled []Descriptor
	// NotBuilt are enabled controllers kcm does not implement yet.
	NotBuilt []string
	// Disabled are the controllers that will not run.
	Disabled []Descriptor
	// OffByDefault are the disabled ones that "*" leaves off and no entry names
	// (bootstrap-signer, token-cleaner, ...).
	OffByDefault []Descriptor
}

// Select applies upstream's --controllers syntax to the registry: "*" turns on every
// controller that is on by default, "name" turns one on, "-name" turns it off; names and
// aliases are both accepted. As upstream, the first entry naming a controller decides, and
// "*" only decides for controllers no entry names. An unknown name is an error.
func Select(registry []Descriptor, controllers []string) (Selection, error) {
	canonical := nameIndex(registry)
	star := false
	explicit := map[string]bool{}
	var unknown []string
	for _, entry := range controllers {
		entry = strings.TrimSpace(entry)
		switch {
		case entry == "*":
			star = true
		case entry == "":
			continue
		default:
			on := !strings.HasPrefix(entry, "-")
			name, ok := canonical[strings.TrimPrefix(entry, "-")]
			if !ok {
				unknown = append(unknown, entry)
				continue
			}
			if _, seen := explicit[name]; !seen {
				explicit[name] = on
			}
		}
	}
	if len(unknown) > 0 {
		known := make([]string, 0, len(canonical))
		for _, d := range registry {
			known = append(known, d.Name)
		}
		sort.Strings(known)
		return Selection{}, fmt.Errorf("--controllers: unknown controller %s; known controllers: %s",
			strings.Join(quoteAll(unknown), ", "), strings.Join(known, ", "))
	}
	var sel Selection
	for _, d := range registry {
		on, named := explicit[d.Name]
		if !named {
			on = star && !d.DisabledByDefault
		}
		if !on {
			sel.Disabled = append(sel.Disabled, d)
			if !named && star && d.DisabledByDefault {
				sel.OffByDefault = append(sel.OffByDefault, d)
			}
			continue
		}
		sel.Enabled = append(sel.Enabled, d)
		if !d.Built() {
			sel.NotBuilt = append(sel.NotBuilt, d.Name)
		}
	}
	return sel, nil
}

// nameIndex maps every controller's name and alias to its name.
func nameIndex(registry []Descriptor) map[string]string {
	canonical := map[string]string{}
	for _, d := range registry {
		canonical[d.Name] = d.Name
		for _, a := range d.Aliases {
			canonical[a] = d.Name
		}
	}
	return canonical
}

// Canonical returns upstream's name of the controller a name or alias of registry names,
// false for a name no controller has (for --controller-groups, as --controllers takes both).
func Canonical(registry []Descriptor) func(string) (string, bool) {
	canonical := nameIndex(registry)
	return func(name string) (string, bool) {
		n, ok := canonical[name]
		return n, ok
	}
}

// SetupEnabled sets up every enabled controller kcm has built whose required feature gates are
// on (logging, as upstream, each one a gate turns off), logs once the enabled ones it has not
// built and the flags given that nothing acts on, and returns the names it set up.
//
// The indexes the enabled controllers declare are registered first, each once. A controller
// set up with a convergence rule gets its clocks (internal/convergence), kept on the leader.
func SetupEnabled(ctx *Context, sel Selection) ([]string, error) {
	logger := log.Log.WithName("controllers")
	sel, gatedOff := sel.gatedOff(ctx.Enabled)
	for _, d := range gatedOff {
		logger.Info("Controller is disabled by a feature gate", "controller", d.Name, "requiredFeatureGates", d.FeatureGates)
	}
	if len(sel.NotBuilt) > 0 {
		logger.Info("Enabled controllers that kcm does not implement yet will not run", "controllers", sel.NotBuilt)
	}
	// Every tracked controller's per-object views (internal/track), leader only as upstream's
	// debug handlers, at /debug/controllers/<controller>/objects/...
	ctx.DebugHandler(track.DebugPath, track.Handler())
	started, wanting, err := setUp(ctx, sel.Enabled)
	if err != nil {
		return nil, err
	}
	actedOn, unused := map[string]bool{}, map[string]bool{}
	for _, f := range sharedFlags {
		actedOn[f.FlagName()] = true
	}
	// A skipped controller has still acted on its flags: they decided that it does not run.
	for _, d := range sel.Enabled {
		if d.Built() {
			for _, f := range d.FlagNames() {
				actedOn[f] = true
			}
		}
	}
	if err := ctx.unapplied(); err != nil {
		return nil, err
	}
	// A flag is unused when only controllers that do not run would read it.
	for _, d := range append(append([]Descriptor{}, sel.Enabled...), sel.Disabled...) {
		for _, f := range d.FlagNames() {
			if !actedOn[f] {
				unused[f] = true
			}
		}
	}
	if ignored := ctx.Options.SetButIgnored(actedOn, unused); len(ignored) > 0 {
		logger.Info("Flags given that kcm does not act on", "flags", ignored)
	}
	all := append(append([]Descriptor{}, sel.Enabled...), sel.Disabled...)
	if ignored := ignoredGates(ctx.Options.FeatureGates.ExplicitlySet(), ctx.gatesRead.has, all, features.ClientGoGates()); len(ignored) > 0 {
		logger.Info("Feature gates given that kcm does not act on", "featureGates", ignored)
	}
	if off := notRunning(wanting, sel.OffByDefault); len(off) > 0 {
		logger.Info("Controllers that do not run for want of a flag (each with the flag that would turn it on)", "controllers", off)
	}
	logger.Info("Controllers set up", "controllers", started)
	return started, nil
}

// SetupTerm sets up, for one term of a controller group (internal/groups), the controllers
// of enabled that kcm has built, against ctx's Manager (the term's): their indexes, each
// once, then each Setup and its convergence clocks. SetupEnabled has already set every one of
// them up once at startup and reported what runs; a term says nothing more. It returns the
// names set up (a Setup may skip its controller, as at startup).
func SetupTerm(ctx *Context, enabled []Descriptor) ([]string, error) {
	started, _, err := setUp(ctx, enabled)
	return started, err
}

// setUp registers the indexes of the built controllers of enabled, each once, then sets each
// one up with its convergence clocks. It returns the names set up and, for those a Setup
// skipped for want of a flag, that flag.
func setUp(ctx *Context, enabled []Descriptor) ([]string, map[string]string, error) {
	var indexes []index.Index
	for _, d := range enabled {
		if d.Built() {
			indexes = append(indexes, d.Indexes...)
		}
	}
	if err := index.Register(context.Background(), ctx.Manager.GetFieldIndexer(), indexes); err != nil {
		return nil, nil, err
	}
	var started []string
	wanting := map[string]string{}
	for _, d := range enabled {
		if !d.Built() {
			continue
		}
		switch err := d.Setup(ctx.For(d)); {
		case errors.Is(err, ErrSkipped):
			var s *skipped
			if errors.As(err, &s) {
				wanting[d.Name] = s.flag
			}
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("setting up %s: %w", d.Name, err)
		}
		if d.Convergence != nil {
			if err := convergence.Install(ctx.Manager, *d.Convergence); err != nil {
				return nil, nil, fmt.Errorf("setting up %s's convergence clocks: %w", d.Name, err)
			}
		}
		started = append(started, d.Name)
	}
	return started, wanting, nil
}

// notRunning names, each with the flag that would turn it on, the controllers whose Setup
// skipped them for want of a flag or file (wanting: controller → flag) and those off by
// default that kubeadm turns on and --controllers does not name, sorted by name.
func notRunning(wanting map[string]string, offByDefault []Descriptor) []string {
	var out []string
	for name, flag := range wanting {
		out = append(out, name+" ("+flag+")")
	}
	for _, d := range offByDefault {
		if !d.KubeadmEnables {
			continue
		}
		name := d.Name
		if len(d.Aliases) > 0 {
			name = d.Aliases[0]
		}
		out = append(out, d.Name+" (--controllers=*,"+name+")")
	}
	sort.Strings(out)
	return out
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}
