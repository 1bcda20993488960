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

// The names of kube-controller-manager v1.37.1 (`kube-controller-manager --help`).
var upstreamNames = strings.Fields(`bootstrap-signer-controller certificatesigningrequest-approving-controller
certificatesigningrequest-cleaner-controller certificatesigningrequest-signing-controller
clusterrole-aggregation-controller cronjob-controller daemonset-controller deployment-controller
device-taint-eviction-controller disruption-controller endpoints-controller endpointslice-controller
endpointslice-mirroring-controller ephemeral-volume-controller garbage-collector-controller
horizontal-pod-autoscaler-controller job-controller kube-apiserver-serving-clustertrustbundle-publisher-controller
legacy-serviceaccount-token-cleaner-controller namespace-controller node-ipam-controller
node-lifecycle-controller persistentvolume-attach-detach-controller persistentvolume-binder-controller
persistentvolume-expander-controller persistentvolume-protection-controller
persistentvolumeclaim-protection-controller pod-garbage-collector-controller
podcertificaterequest-cleaner-controller podgroup-protection-controller replicaset-controller
replicationcontroller-controller resourceclaim-controller resourcepoolstatusrequest-controller
resourcequota-controller root-ca-certificate-publisher-controller selinux-warning-controller
service-cidr-controller serviceaccount-controller serviceaccount-token-controller statefulset-controller
storage-version-migrator-controller storageversion-garbage-collector-controller taint-eviction-controller
token-cleaner-controller ttl-after-finished-controller ttl-controller
validatingadmissionpolicy-status-controller volumeattributesclass-protection-controller`)

// cloud-controller-manager's loops (k8s.io/cloud-provider/names), which kcm also runs: upstream's
// names and aliases.
func cloudControllerNames() (names []string, aliases map[string]string) {
	aliases = ccmnames.CCMControllerAliases()
	for _, n := range aliases {
		names = append(names, n)
	}
	return names, aliases
}

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
	want = append(want, upstreamNames...)
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

// The feature gates each controller requires in kube-controller-manager v1.37.1
// (`go run ./cmd/upstream-facts -controllers` in hack/tools/k8s): with one of them off, the
// controller does not run.
var upstreamGates = map[string]string{
	"device-taint-eviction-controller":                               "DynamicResourceAllocation,DRADeviceTaints",
	"kube-apiserver-serving-clustertrustbundle-publisher-controller": "ClusterTrustBundle",
	"podcertificaterequest-cleaner-controller":                       "PodCertificateRequest",
	"podgroup-protection-controller":                                 "GenericWorkload",
	"resourceclaim-controller":                                       "DynamicResourceAllocation",
	"resourcepoolstatusrequest-controller":                           "DRAResourcePoolStatus",
	"selinux-warning-controller":                                     "SELinuxChangePolicy",
	"service-cidr-controller":                                        "MultiCIDRServiceAllocator",
	"storageversion-garbage-collector-controller":                    "APIServerIdentity,StorageVersionAPI",
	"taint-eviction-controller":                                      "SeparateTaintEvictionController",
	"volumeattributesclass-protection-controller":                    "VolumeAttributesClass",
}

func TestUpstreamFeatureGates(t *testing.T) {
	for _, d := range Registry() {
		var gates []string
		for _, g := range d.FeatureGates {
			gates = append(gates, string(g))
		}
		if got := strings.Join(gates, ","); got != upstreamGates[d.Name] {
			t.Errorf("%s requires gates %q, upstream %q", d.Name, got, upstreamGates[d.Name])
		}
	}
}
