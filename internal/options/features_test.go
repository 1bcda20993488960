package options

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
)

// --feature-gates is upstream's: the messages below are those upstream's
// kube-controller-manager v1.37.1 prints for the same arguments ("command failed" err=...).
func TestFeatureGateErrorsAreUpstreams(t *testing.T) {
	tests := []struct {
		args []string
		want string
		// anyOrder: upstream lists these errors in map order.
		anyOrder bool
	}{
		{[]string{"--feature-gates=Nope=true"}, "unrecognized feature gate: Nope", false},
		{[]string{"--feature-gates=kube:Nope=true"}, "unrecognized feature gate: Nope", false},
		{[]string{"--feature-gates=SeparateTaintEvictionController=maybe"}, `invalid value of SeparateTaintEvictionController=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`, false},
		{[]string{"--feature-gates=SeparateTaintEvictionController"}, "missing bool value for SeparateTaintEvictionController", false},
		{[]string{"--feature-gates=other:A=true"}, "component not registered: other", false},
		{[]string{"--feature-gates=SeparateTaintEvictionController=false"}, "cannot set feature gate SeparateTaintEvictionController to false, feature is locked to true", false},
		// Known gates: upstream walks the prefixes in map order, so with unknown ones either
		// error may come first.
		{[]string{"--feature-gates=GenericWorkload=true", "--feature-gates=kube:StatefulSetSemanticRevisionComparison=true"}, "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use", false},
		{[]string{"--feature-gates=AllAlpha=true"}, "[PodGroupPreemptionPolicy is enabled, but depends on features that are disabled: [GenericWorkload], CompositePodGroup is enabled, but depends on features that are disabled: [GenericWorkload], WorkloadWithJob is enabled, but depends on features that are disabled: [GenericWorkload], TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: [GenericWorkload]]", true},
		{[]string{"--emulated-version=1.30"}, "[emulation version 1.30 is not between [1.34, 1.37.0], minCompatibilityVersion version 1.34 is not between [1.34, 1.30]]", false},
	}
	for _, tt := range tests {
		o := New()
		err := o.Parse(tt.args)
		if err == nil || aggregated(err.Error(), tt.anyOrder) != aggregated(tt.want, tt.anyOrder) {
			t.Errorf("%v: error = %v, want upstream's %q", tt.args, err, tt.want)
		}
	}
}

// Gates parse with upstream's syntax and move with the emulated version.
func TestFeatureGates(t *testing.T) {
	tests := []struct {
		args []string
		want map[string]bool
	}{
		{nil, map[string]bool{"StatefulSetSemanticRevisionComparison": true, "GenericWorkload": false, "SeparateTaintEvictionController": true}},
		{[]string{"--feature-gates=StatefulSetSemanticRevisionComparison=false,GenericWorkload=true"}, map[string]bool{"StatefulSetSemanticRevisionComparison": false, "GenericWorkload": true}},
		{[]string{"--feature-gates=kube:GenericWorkload=true", "--feature-gates=kube:StatefulSetSemanticRevisionComparison=false"}, map[string]bool{"StatefulSetSemanticRevisionComparison": false, "GenericWorkload": true}},
		{[]string{"--feature-gates= GenericWorkload = true "}, map[string]bool{"GenericWorkload": true}},
		// DeploymentReplicaSetTerminatingReplicas went beta (on) in 1.35: off when emulating 1.34.
		{[]string{"--emulated-version=1.34"}, map[string]bool{"DeploymentReplicaSetTerminatingReplicas": false}},
		{[]string{"--emulated-version=kube=1.35"}, map[string]bool{"DeploymentReplicaSetTerminatingReplicas": true}},
		{[]string{"--feature-gates=AllBeta=true"}, map[string]bool{"GenericWorkload": true}},
	}
	for _, tt := range tests {
		o := New()
		if err := o.Parse(tt.args); err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		for gate, want := range tt.want {
			if got := o.FeatureGates.Enabled(featuregate.Feature(gate)); got != want {
				t.Errorf("%v: %s = %v, want %v", tt.args, gate, got, want)
			}
		}
	}
	// The gates are acted on, so never reported as ignored.
	o := New()
	if err := o.Parse([]string{"--feature-gates=GenericWorkload=true", "--emulated-version=1.36"}); err != nil {
		t.Fatal(err)
	}
	if ignored := o.SetButIgnored(nil, nil); len(ignored) > 0 {
		t.Errorf("reported as ignored: %v", ignored)
	}
}

// aggregated returns the errors of an aggregate's message ("[a, b]"), sorted when their order
// does not matter.
func aggregated(msg string, anyOrder bool) string {
	if !anyOrder {
		return msg
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(msg, "["), "]"), "], ")
	for i := range parts {
		parts[i] = strings.TrimSuffix(parts[i], "]")
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}
