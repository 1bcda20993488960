// Package setup is what every controller package and the registry share: the Descriptor a
// controller package exports about itself, the Context its Setup is given, and the
// selection and set-up of the enabled controllers (upstream's --controllers).
//
// A controller package holds, in its setup.go, one exported Descriptor (upstream name,
// aliases, default, required feature gates, the typed flags it reads, its client name, the
// indexes and cache restrictions it needs) and its Setup. internal/controller/registry.go is
// the ordered list of those descriptors and nothing else.
package setup

import (
	"errors"

	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
)

// ErrSkipped is what a Setup returns when, as upstream's constructor for that controller
// does, it decides from its flags or the cluster not to run (node-ipam without
// --allocate-node-cidrs, csr-signing without signing files, ...): it is logged by the
// Setup, is not an error, and the controller is neither named among those set up nor given
// a /healthz check, as upstream.
var ErrSkipped = errors.New("controller skipped")

// SkippedFor is the ErrSkipped of a controller that does not run for want of a flag (or of
// the file a flag names); flag says what would turn it on. SetupEnabled names every such
// controller in one line, so that an operator who swapped in kcm with fewer flags than
// kubeadm gives sees what is off.
func SkippedFor(flag string) error { return &skipped{flag: flag} }

type skipped struct{ flag string }

func (e *skipped) Error() string        { return "controller skipped: it needs " + e.flag }
func (e *skipped) Is(target error) bool { return target == ErrSkipped }

// Descriptor is one upstream controller as kcm knows it.
type Descriptor struct {
	// Name is upstream's controller name, as --controllers and the logs name it.
	Name string
	// Aliases are upstream's older names, also accepted by --controllers.
	Aliases []string
	// DisabledByDefault: `*` does not enable it (bootstrap-signer, token-cleaner, ...).
	DisabledByDefault bool
	// KubeadmEnables: off by default, but kubeadm's --controllers=*,bootstrapsigner,tokencleaner
	// names it (cluster-info is signed, expired bootstrap tokens go); kcm says so when it is off.
	KubeadmEnables bool
	// FeatureGates are the upstream feature gates the controller requires, all of them: with
	// one off, the controller does not run (internal/features names every gate).
	FeatureGates []featuregate.Feature
	// ClientName is upstream's client name for the controller: the last part of its
	// User-Agent and, with --use-service-account-credentials, its ServiceAccount.
	ClientName string
	// RootCredentials: the controller acts with kcm's own identity even with
	// --use-service-account-credentials (upstream's serviceaccount-token-controller, which
	// makes the tokens the others would use).
	RootCredentials bool
	// CloudProvider marks upstream cloud-controller-manager's loops, which kcm runs when
	// --cloud-provider names a provider (upstream's IsCloudProviderController): upstream's
	// kube-controller-manager does not know their names.
	CloudProvider bool
	// Flags are the upstream flags only this controller acts on: Setup reads exactly these
	// (a test checks both ways), and they are reported as ignored when it does not run.
	Flags []options.Flag
	// Indexes are the shared cache's field indexes the controller lists by; each is
	// registered once, whichever controllers need it.
	Indexes []index.Index
	// Cache restricts what the shared cache holds of a kind, for every controller: kcm's
	// controllers need, for instance, only the kube-root-ca.crt ConfigMaps.
	Cache map[client.Object]cache.ByObject
	// Convergence is the controller's convergence rule (issue 37's SLIs), when it has one:
	// SetupEnabled keeps its clocks, on the leader, once the controller is set up.
	Convergence *convergence.Rule
	// Setup registers the controller with the manager; nil while kcm has not built it.
	Setup func(*Context) error
}

// Built reports whether kcm implements the controller.
func (d Descriptor) Built() bool { return d.Setup != nil }

// FlagNames are the names of d.Flags.
func (d Descriptor) FlagNames() []string {
	names := make([]string, len(d.Flags))
	for i, f := range d.Flags {
		names[i] = f.FlagName()
	}
	return names
}

// sharedFlags are read when setting any controller up, not by one controller.
var sharedFlags = []options.Flag{options.UseServiceAccountCredentials}

// FlagsRead lists the upstream flags kcm's set-up and the built controllers of reg read, for
// options.New.
func FlagsRead(reg []Descriptor) []string {
	var flags []string
	for _, f := range sharedFlags {
		flags = append(flags, f.FlagName())
	}
	for _, d := range reg {
		if d.Built() {
			flags = append(flags, d.FlagNames()...)
		}
	}
	return flags
}

// CacheRestrictions merges the cache restrictions of every controller of reg, for the
// manager's cache. Restrictions hold whether or not a controller runs: the cache's shape
// does not depend on --controllers. Two controllers restricting one kind must agree (a test
// checks the registry).
func CacheRestrictions(reg []Descriptor) map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{}
	seen := map[string]bool{}
	for _, d := range reg {
		for obj, by := range d.Cache {
			key := index.TypeName(obj)
			if seen[key] {
				continue
			}
			seen[key] = true
			out[obj] = by
		}
	}
	return out
}
