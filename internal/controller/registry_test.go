package controller

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ccmnames "k8s.io/cloud-provider/names"

	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// cloud-controller-manager's loops (k8s.io/cloud-provider/names), which kcm also runs: upstream's
// names and aliases.
func cloudControllerNames() (names []string, aliases map[string]string) {
	aliases = ccmnames.CCMControllerAliases()
	for _, n := range aliases {
		names = append(names, n)
	}
	return names, aliases
}

// The registry holds upstream v1.37.1's controllers (upstreamControllers, generated from
// upstream's descriptors by `make upstream-flags`) and cloud-controller-manager's, no other.
func TestRegistryHasEveryUpstreamController(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z]([-a-z]*[a-z])?-controller$`)
	seen := map[string]bool{}
	for _, d := range Registry() {
		if !valid.MatchString(d.Name) {
			t.Errorf("%q is not a valid controller name", d.Name)
		}
		for _, n := range append([]string{d.Name}, d.Aliases...) {
			if seen[n] {
				t.Errorf("%q is registered twice", n)
			}
			seen[n] = true
		}
	}
	var names []string
	for _, d := range Registry() {
		names = append(names, d.Name)
	}
	want, aliases := cloudControllerNames()
	for name := range upstreamControllers {
		want = append(want, name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("registry names differ from upstream v1.37.1's and cloud-controller-manager's:\n got %v\nwant %v", names, want)
	}
	var cloudLoops []string
	for _, d := range Registry() {
		if d.CloudProvider {
			cloudLoops = append(cloudLoops, d.Name)
		}
	}
	ccm, _ := cloudControllerNames()
	slices.Sort(cloudLoops)
	slices.Sort(ccm)
	if !slices.Equal(cloudLoops, ccm) {
		t.Errorf("descriptors marked CloudProvider are %v, want cloud-controller-manager's %v", cloudLoops, ccm)
	}
	for alias, name := range aliases {
		sel, err := setup.Select(Registry(), []string{alias})
		if err != nil || len(sel.Enabled) != 1 || sel.Enabled[0].Name != name {
			t.Errorf("alias %q does not name %s as cloud-controller-manager's does", alias, name)
		}
	}
}

func TestUpstreamDefaults(t *testing.T) {
	sel, err := setup.Select(Registry(), []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	var off []string
	for _, d := range sel.Disabled {
		off = append(off, d.Name)
	}
	if want := "bootstrap-signer-controller,token-cleaner-controller,selinux-warning-controller"; strings.Join(off, ",") != want {
		t.Errorf("disabled by default = %v, want %s", off, want)
	}
}

func TestFlagsAreThoseOfBuiltControllers(t *testing.T) {
	flags := setup.FlagsRead(Registry())
	built := map[string]bool{}
	for _, d := range Registry() {
		for _, f := range d.FlagNames() {
			built[f] = built[f] || d.Built()
		}
	}
	for f, b := range built {
		if slices.Contains(flags, f) != b {
			t.Errorf("--%s read by a built controller: %v, listed: %v", f, b, !b)
		}
	}
	if !slices.Contains(flags, "node-monitor-grace-period") {
		t.Errorf("node-lifecycle-controller's flags missing: %v", flags)
	}
}

// Upstream starts the tokens controller before every other controller; kcm sets controllers
// up in registry order, so it must stay first there.
func TestServiceAccountTokenControllerIsSetUpFirst(t *testing.T) {
	sel, err := setup.Select(Registry(), []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	if first := sel.Enabled[0]; first.Name != "serviceaccount-token-controller" || !first.Built() {
		t.Errorf("first controller set up is %s (built %v), want serviceaccount-token-controller", first.Name, first.Built())
	}
}

// Each built controller names its client, as upstream names its clientset (User-Agent, and
// the ServiceAccount with --use-service-account-credentials).
func TestBuiltControllersNameTheirClient(t *testing.T) {
	for _, d := range Registry() {
		if d.Built() && d.ClientName == "" {
			t.Errorf("%s has no ClientName", d.Name)
		}
	}
}

// Two controllers restricting the cache for one kind must ask for the same restriction: the
// cache has one shape for everybody.
func TestCacheRestrictionsAgree(t *testing.T) {
	seen := map[string]string{}
	for _, d := range Registry() {
		for obj, by := range d.Cache {
			key := index.TypeName(obj)
			got := fmt.Sprintf("label=%v field=%v namespaces=%v", by.Label, by.Field, by.Namespaces)
			if prev, ok := seen[key]; ok && prev != got {
				t.Errorf("%s: %s restricts %s to %s, another controller to %s", key, d.Name, key, got, prev)
			}
			seen[key] = got
		}
	}
	if len(setup.CacheRestrictions(Registry())) != len(seen) {
		t.Errorf("CacheRestrictions lost a kind")
	}
}

// The garbage collector watches some kinds through the shared cache (its typed informers)
// instead of a metadata informer of its own; a kind the shared cache restricts to some of its
// objects would hide the others from the collector's graph, and their dependents would never
// be collected.
func TestCollectorSharesNoRestrictedKind(t *testing.T) {
	restricted := setup.CacheRestrictions(Registry())
	if len(restricted) == 0 {
		t.Fatal("no controller restricts the shared cache: the witness (root-ca ConfigMaps) is gone")
	}
	for obj := range restricted {
		gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, gvk := range gvks {
			if garbagecollector.SharesKind(gvk) {
				t.Errorf("%s: the shared cache restricts it, and the garbage collector watches it there", gvk)
			}
		}
	}
}

// Each controller requires exactly the feature gates its kube-controller-manager v1.37.1 twin does
// (upstreamControllers, generated from upstream's descriptors by `make upstream-flags`): with
// one of them off, the controller does not run.
func TestUpstreamFeatureGates(t *testing.T) {
	for _, d := range Registry() {
		var gates []string
		for _, g := range d.FeatureGates {
			gates = append(gates, string(g))
		}
		if got := strings.Join(gates, ","); got != upstreamControllers[d.Name] {
			t.Errorf("%s requires gates %q, upstream %q", d.Name, got, upstreamControllers[d.Name])
		}
	}
}
