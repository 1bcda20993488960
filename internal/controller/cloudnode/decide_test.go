package cloudnode

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

var cloudTaint = corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}

func TestLabelsToReconcile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{name: "no labels"},
		{name: "only GA labels: nothing to derive them from", labels: map[string]string{corev1.LabelTopologyZone: "a"}},
		{
			name:   "beta labels without GA ones",
			labels: map[string]string{corev1.LabelFailureDomainBetaZone: "z", corev1.LabelFailureDomainBetaRegion: "r", corev1.LabelInstanceType: "t"},
			want:   map[string]string{corev1.LabelTopologyZone: "z", corev1.LabelTopologyRegion: "r", corev1.LabelInstanceTypeStable: "t"},
		},
		{
			name:   "GA label differing from beta: beta wins",
			labels: map[string]string{corev1.LabelFailureDomainBetaZone: "z", corev1.LabelTopologyZone: "other"},
			want:   map[string]string{corev1.LabelTopologyZone: "z"},
		},
		{
			name: "in agreement",
			labels: map[string]string{corev1.LabelFailureDomainBetaZone: "z", corev1.LabelTopologyZone: "z",
				corev1.LabelInstanceType: "t", corev1.LabelInstanceTypeStable: "t"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, labelsToReconcile(tc.labels)); diff != "" {
				t.Errorf("labelsToReconcile (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInitialise(t *testing.T) {
	other := corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name          string
		node          corev1.Node
		meta          cloudprovider.InstanceMetadata
		wantID        string
		wantLabels    map[string]string
		wantTaints    []corev1.Taint
		wantDiscarded []discardedLabel
	}{
		{
			name: "everything the provider knows, the cloud taint removed and others kept",
			node: corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{cloudTaint, other}}},
			meta: cloudprovider.InstanceMetadata{ProviderID: "fake://1", InstanceType: "big", Zone: "z1", Region: "r1",
				AdditionalLabels: map[string]string{"example.com/rack": "7"}},
			wantID: "fake://1",
			wantLabels: map[string]string{
				corev1.LabelInstanceType: "big", corev1.LabelInstanceTypeStable: "big",
				corev1.LabelFailureDomainBetaZone: "z1", corev1.LabelTopologyZone: "z1",
				corev1.LabelFailureDomainBetaRegion: "r1", corev1.LabelTopologyRegion: "r1",
				"example.com/rack": "7",
			},
			wantTaints: []corev1.Taint{other},
		},
		{
			name:       "the kubelet's provider ID is kept; empty metadata sets no label",
			node:       corev1.Node{Spec: corev1.NodeSpec{ProviderID: "kubelet://1", Taints: []corev1.Taint{cloudTaint}}},
			meta:       cloudprovider.InstanceMetadata{ProviderID: "fake://1"},
			wantID:     "kubelet://1",
			wantTaints: []corev1.Taint{},
		},
		{
			name: "additional labels: none in a Kubernetes namespace, none overwriting the node's",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"mine": "a", "same": "s"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{cloudTaint}}},
			meta: cloudprovider.InstanceMetadata{AdditionalLabels: map[string]string{
				"mine": "b", "same": "s", "node.kubernetes.io/x": "1", "k8s.io/y": "2", "sub.k8s.io/z": "3", "kubernetes.io.example.com/ok": "4",
			}},
			wantLabels: map[string]string{"mine": "a", "same": "s", "kubernetes.io.example.com/ok": "4"},
			wantTaints: []corev1.Taint{},
			wantDiscarded: []discardedLabel{{"k8s.io/y", "kubernetes namespace"}, {"mine", "already present"},
				{"node.kubernetes.io/x", "kubernetes namespace"}, {"sub.k8s.io/z", "kubernetes namespace"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node.DeepCopy()
			discarded := initialise(node, &tc.meta)
			if node.Spec.ProviderID != tc.wantID {
				t.Errorf("providerID = %q, want %q", node.Spec.ProviderID, tc.wantID)
			}
			if diff := cmp.Diff(tc.wantLabels, node.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTaints, node.Spec.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			sortDiscarded(discarded)
			if diff := cmp.Diff(tc.wantDiscarded, discarded); diff != "" {
				t.Errorf("discarded (-want +got):\n%s", diff)
			}
			if tainted(node) {
				t.Error("node still tainted")
			}
		})
	}
}

// sortDiscarded orders by key: the provider's labels are a map.
func sortDiscarded(d []discardedLabel) {
	slices.SortFunc(d, func(a, b discardedLabel) int { return strings.Compare(a.Key, b.Key) })
}

func addr(t corev1.NodeAddressType, a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: t, Address: a}
}

func TestAddressesToWrite(t *testing.T) {
	internal1, internal2 := addr(corev1.NodeInternalIP, "10.0.0.1"), addr(corev1.NodeInternalIP, "10.0.0.2")
	external := addr(corev1.NodeExternalIP, "192.0.2.1")
	internal6 := addr(corev1.NodeInternalIP, "fd00::1")
	kubeletHost, cloudHost := addr(corev1.NodeHostName, "kubelet-name"), addr(corev1.NodeHostName, "cloud-name")
	withIP := func(ip string, status ...corev1.NodeAddress) *corev1.Node {
		n := &corev1.Node{Status: corev1.NodeStatus{Addresses: status}}
		if ip != "" {
			n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: ip}
		}
		return n
	}
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		cloud     []corev1.NodeAddress
		want      []corev1.NodeAddress
		wantWrite bool
		wantErr   bool
	}{
		{name: "the provider gives none: nothing written", node: withIP("", internal1)},
		{
			name: "new addresses; the kubelet's hostname kept when the provider has none",
			node: withIP("", kubeletHost), cloud: []corev1.NodeAddress{internal1, external},
			want: []corev1.NodeAddress{internal1, external, kubeletHost}, wantWrite: true,
		},
		{
			name: "the provider's hostname replaces the kubelet's",
			node: withIP("", kubeletHost), cloud: []corev1.NodeAddress{internal1, cloudHost},
			want: []corev1.NodeAddress{internal1, cloudHost}, wantWrite: true,
		},
		{
			name: "unchanged: nothing written",
			node: withIP("", internal1, kubeletHost), cloud: []corev1.NodeAddress{internal1},
			want: []corev1.NodeAddress{internal1, kubeletHost},
		},
		{
			name: "an address changed",
			node: withIP("", internal1), cloud: []corev1.NodeAddress{internal2},
			want: []corev1.NodeAddress{internal2}, wantWrite: true,
		},
		{
			name: "the provided node IP is the only address of its type",
			node: withIP("10.0.0.2"), cloud: []corev1.NodeAddress{internal1, internal2, external},
			want: []corev1.NodeAddress{internal2, external}, wantWrite: true,
		},
		{
			name: "dual-stack provided node IPs",
			node: withIP("10.0.0.1,fd00::1"), cloud: []corev1.NodeAddress{internal2, internal1, internal6},
			want: []corev1.NodeAddress{internal1, internal6}, wantWrite: true,
		},
		{
			name: "a provided node IP the provider does not give is an error",
			node: withIP("10.9.9.9"), cloud: []corev1.NodeAddress{internal1}, wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, write, err := addressesToWrite(tc.node, tc.cloud)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if write != tc.wantWrite {
				t.Errorf("write = %v, want %v", write, tc.wantWrite)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddressesChanged(t *testing.T) {
	a, b := addr(corev1.NodeInternalIP, "10.0.0.1"), addr(corev1.NodeExternalIP, "192.0.2.1")
	for _, tc := range []struct {
		name     string
		old, new []corev1.NodeAddress
		want     bool
	}{
		{name: "both empty", want: false},
		{name: "same, other order", old: []corev1.NodeAddress{a, b}, new: []corev1.NodeAddress{b, a}, want: false},
		{name: "one more", old: []corev1.NodeAddress{a}, new: []corev1.NodeAddress{a, b}, want: true},
		{name: "one changed", old: []corev1.NodeAddress{a}, new: []corev1.NodeAddress{addr(corev1.NodeInternalIP, "10.0.0.2")}, want: true},
		{name: "type changed", old: []corev1.NodeAddress{a}, new: []corev1.NodeAddress{addr(corev1.NodeExternalIP, "10.0.0.1")}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := addressesChanged(tc.old, tc.new); got != tc.want {
				t.Errorf("addressesChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
