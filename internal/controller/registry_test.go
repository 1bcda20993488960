package controller

import (
	"regexp"
	"slices"
	"strings"
	"testing"
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
	slices.Sort(names)
	if !slices.Equal(names, upstreamNames) {
		t.Errorf("registry names differ from upstream v1.37.1:\n got %v\nwant %v", names, upstreamNames)
	}
}

func TestSelect(t *testing.T) {
	built := func(*Context) error { return nil }
	registry := []Descriptor{
		{Name: "a-controller", Aliases: []string{"a"}, Setup: built},
		{Name: "b-controller", Aliases: []string{"b"}},
		{Name: "off-controller", Aliases: []string{"off"}, DisabledByDefault: true, Setup: built},
	}
	tests := []struct {
		name         string
		controllers  []string
		wantEnabled  string
		wantNotBuilt string
		wantErr      string
	}{
		{name: "star enables the on-by-default", controllers: []string{"*"}, wantEnabled: "a-controller,b-controller", wantNotBuilt: "b-controller"},
		{name: "disable one", controllers: []string{"*", "-a-controller"}, wantEnabled: "b-controller", wantNotBuilt: "b-controller"},
		{name: "disable by alias", controllers: []string{"*", "-a"}, wantEnabled: "b-controller", wantNotBuilt: "b-controller"},
		{name: "enable one disabled by default", controllers: []string{"*", "off"}, wantEnabled: "a-controller,b-controller,off-controller", wantNotBuilt: "b-controller"},
		{name: "no star: only those named", controllers: []string{"a-controller"}, wantEnabled: "a-controller"},
		{name: "only a minus: nothing", controllers: []string{"-a-controller"}},
		{name: "first entry naming a controller decides", controllers: []string{"-a", "a-controller", "*"}, wantEnabled: "b-controller", wantNotBuilt: "b-controller"},
		{name: "first entry decides, enabling", controllers: []string{"a", "-a"}, wantEnabled: "a-controller"},
		{name: "empty list", controllers: nil},
		{name: "unknown", controllers: []string{"*", "bogus"}, wantErr: `unknown controller "bogus"`},
		{name: "unknown negated", controllers: []string{"-bogus"}, wantErr: `"-bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Select(registry, tt.controllers)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var enabled []string
			for _, d := range sel.Enabled {
				enabled = append(enabled, d.Name)
			}
			if got := strings.Join(enabled, ","); got != tt.wantEnabled {
				t.Errorf("enabled = %q, want %q", got, tt.wantEnabled)
			}
			if got := strings.Join(sel.NotBuilt, ","); got != tt.wantNotBuilt {
				t.Errorf("not built = %q, want %q", got, tt.wantNotBuilt)
			}
			if len(sel.Enabled)+len(sel.Disabled) != len(registry) {
				t.Errorf("enabled and disabled do not cover the registry")
			}
		})
	}
}

func TestUpstreamDefaults(t *testing.T) {
	sel, err := Select(Registry(), []string{"*"})
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
	flags := Flags(Registry())
	built := map[string]bool{}
	for _, d := range Registry() {
		for _, f := range d.Flags {
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
