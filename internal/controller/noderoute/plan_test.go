package noderoute

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	netutils "k8s.io/utils/net"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func mustCIDRs(t *testing.T, s ...string) []*net.IPNet {
	t.Helper()
	cidrs, err := netutils.ParseCIDRs(s)
	if err != nil {
		t.Fatal(err)
	}
	return cidrs
}

func testNode(name string, podCIDRs ...string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.NodeSpec{PodCIDRs: podCIDRs},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0." + name[len(name)-1:]}}},
	}
}

func route(node, cidr string) *cloudprovider.Route {
	return &cloudprovider.Route{Name: node + "-" + cidr, TargetNode: types.NodeName(node), DestinationCIDR: cidr}
}

// describe renders a plan as sorted "delete node cidr" and "create node cidr hint" lines.
func describe(p plan) []string {
	var out []string
	for _, d := range p.deletes {
		out = append(out, fmt.Sprintf("delete %s %s", d.TargetNode, d.DestinationCIDR))
	}
	for _, c := range p.creates {
		out = append(out, fmt.Sprintf("create %s %s %s", c.route.TargetNode, c.route.DestinationCIDR, c.nameHint))
	}
	sort.Strings(out)
	return out
}

// TestPlanRoutes is upstream's reconcile decision: which routes are deleted and created.
func TestPlanRoutes(t *testing.T) {
	blackhole := route("a", "10.244.0.0/24")
	blackhole.Blackhole = true
	byAddress := route("a", "10.244.0.0/24")
	byAddress.EnableNodeAddresses = true
	byAddress.TargetNodeAddresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.9.9"}}
	bySameAddress := route("a", "10.244.0.0/24")
	bySameAddress.EnableNodeAddresses = true
	bySameAddress.TargetNodeAddresses = testNode("a").Status.Addresses

	cases := []struct {
		name   string
		nodes  []*corev1.Node
		routes []*cloudprovider.Route
		want   []string
	}{
		{
			name:  "every pod CIDR of every node gets a route named after the node's UID",
			nodes: []*corev1.Node{testNode("a", "10.244.0.0/24", "fd00:10:244::/64"), testNode("b", "10.244.1.0/24")},
			want: []string{
				"create a 10.244.0.0/24 uid-a", "create a fd00:10:244::/64 uid-a",
				"create b 10.244.1.0/24 uid-b",
			},
		},
		{
			name:  "a node without pod CIDRs is left alone",
			nodes: []*corev1.Node{testNode("a")},
		},
		{
			name:   "an existing route is kept",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24")},
			routes: []*cloudprovider.Route{route("a", "10.244.0.0/24")},
		},
		{
			name:   "a deleted node's route in the cluster CIDR is deleted",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24")},
			routes: []*cloudprovider.Route{route("a", "10.244.0.0/24"), route("gone", "10.244.7.0/24")},
			want:   []string{"delete gone 10.244.7.0/24"},
		},
		{
			name:   "routes outside the cluster CIDRs, or unparsable, are someone else's",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24")},
			routes: []*cloudprovider.Route{route("a", "10.244.0.0/24"), route("gone", "192.168.7.0/24"), route("gone", "nonsense")},
		},
		{
			name:   "a route is the controller's when its first or last address is in a cluster CIDR",
			routes: []*cloudprovider.Route{route("gone", "10.0.0.0/8"), route("gone", "10.244.0.0/15")},
			want:   []string{"delete gone 10.244.0.0/15"},
		},
		{
			name:   "a route for a CIDR the node no longer has is deleted, the new CIDR created",
			nodes:  []*corev1.Node{testNode("a", "10.244.5.0/24")},
			routes: []*cloudprovider.Route{route("a", "10.244.0.0/24")},
			want:   []string{"create a 10.244.5.0/24 uid-a", "delete a 10.244.0.0/24"},
		},
		{
			name:   "a route to another node for a node's CIDR is deleted, the node's created",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24"), testNode("b", "10.244.1.0/24")},
			routes: []*cloudprovider.Route{route("b", "10.244.0.0/24"), route("b", "10.244.1.0/24")},
			want:   []string{"create a 10.244.0.0/24 uid-a", "delete b 10.244.0.0/24"},
		},
		{
			name:   "a blackhole is deleted; its CIDR counts as routed until the next reconcile",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24")},
			routes: []*cloudprovider.Route{blackhole},
			want:   []string{"delete a 10.244.0.0/24"},
		},
		{
			name:   "a route by node address to former addresses is deleted and created again",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24")},
			routes: []*cloudprovider.Route{byAddress},
			want:   []string{"create a 10.244.0.0/24 uid-a", "delete a 10.244.0.0/24"},
		},
		{
			name:   "a route by node address to the current addresses is kept",
			nodes:  []*corev1.Node{testNode("a", "10.244.0.0/24")},
			routes: []*cloudprovider.Route{bySameAddress},
		},
		{
			name:   "a route to no node in the cluster CIDR is deleted",
			routes: []*cloudprovider.Route{route("", "10.244.3.0/24")},
			want:   []string{"delete  10.244.3.0/24"},
		},
	}
	clusterCIDRs := mustCIDRs(t, "10.244.0.0/16", "fd00:10:244::/56")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(planRoutes(tc.nodes, tc.routes, clusterCIDRs))
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestNetworkConditionPerNode: which nodes get NetworkUnavailable, and to what, once the
// planned creations are done.
func TestNetworkConditionPerNode(t *testing.T) {
	clusterCIDRs := mustCIDRs(t, "10.244.0.0/16")
	nodes := []*corev1.Node{testNode("a", "10.244.0.0/24"), testNode("b", "10.244.1.0/24"), testNode("c"), testNode("d")}
	routes := []*cloudprovider.Route{route("a", "10.244.0.0/24"), route("c", "10.244.2.0/24")}
	p := planRoutes(nodes, routes, clusterCIDRs)
	cases := []struct {
		node        string
		created, ok bool
	}{
		{"a", true, true},  // its route exists
		{"b", false, true}, // its route is still to be created
		{"c", false, true}, // routes to it, but no pod CIDR
		{"d", false, false},
	}
	for _, tc := range cases {
		actions, known := p.actions[types.NodeName(tc.node)]
		created, ok := routesCreated(actions, known)
		if created != tc.created || ok != tc.ok {
			t.Errorf("node %s: routesCreated = %v, %v; want %v, %v", tc.node, created, ok, tc.created, tc.ok)
		}
	}
	// b's route created: b's network is available.
	p.actions["b"]["10.244.1.0/24"] = keep
	if created, ok := routesCreated(p.actions["b"], true); !created || !ok {
		t.Errorf("node b after its creation: routesCreated = %v, %v; want true, true", created, ok)
	}
}

func TestConditionCurrent(t *testing.T) {
	withCondition := func(status corev1.ConditionStatus, reason, message string) *corev1.Node {
		n := testNode("a")
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: status, Reason: reason, Message: message}}
		return n
	}
	cases := []struct {
		name    string
		node    *corev1.Node
		created bool
		want    bool
	}{
		{"no condition", testNode("a"), true, false},
		{"created, already RouteCreated", withCondition(corev1.ConditionFalse, "RouteCreated", "other words"), true, true},
		{"created, False for another reason (e.g. a CNI's)", withCondition(corev1.ConditionFalse, "CalicoIsUp", ""), true, false},
		{"created, was NoRouteCreated", withCondition(corev1.ConditionTrue, "NoRouteCreated", ""), true, false},
		{"failed, already NoRouteCreated", withCondition(corev1.ConditionTrue, "NoRouteCreated", ""), false, true},
		{"failed, was RouteCreated", withCondition(corev1.ConditionFalse, "RouteCreated", ""), false, false},
	}
	for _, tc := range cases {
		if got := conditionCurrent(tc.node, tc.created); got != tc.want {
			t.Errorf("%s: conditionCurrent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUpdateTrigger: with the watch-based gate, which node updates trigger a reconcile.
func TestUpdateTrigger(t *testing.T) {
	base := testNode("a", "10.244.0.0/24")
	base.ResourceVersion = "1"
	bumped := func(f func(*corev1.Node)) *corev1.Node {
		n := base.DeepCopy()
		n.ResourceVersion = "2"
		f(n)
		return n
	}
	cases := []struct {
		name    string
		newNode client.Object
		want    string
	}{
		{"pod CIDRs changed", bumped(func(n *corev1.Node) { n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, "fd00::/64") }), "node_change"},
		{"addresses changed", bumped(func(n *corev1.Node) { n.Status.Addresses[0].Address = "192.168.0.9" }), "node_change"},
		{"a heartbeat", bumped(func(n *corev1.Node) { n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady}} }), ""},
		{"a resync (same resourceVersion)", base.DeepCopy(), "periodic"},
	}
	for _, tc := range cases {
		req, ok := updateTrigger(base, tc.newNode)
		if got := map[bool]string{true: req.Name}[ok]; got != tc.want {
			t.Errorf("%s: trigger %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestClusterCIDRs(t *testing.T) {
	cases := []struct {
		flag    string
		want    int
		wantErr string
	}{
		{"10.244.0.0/16", 1, ""},
		{" 10.244.0.0/16,fd00:10:244::/56 ", 2, ""},
		{"", 0, "invalid CIDR[0]"},
		{"10.244.0.0/16,10.245.0.0/16", 0, "not configured as dual stack"},
		{"10.244.0.0/16,fd00::/56,10.245.0.0/16", 0, "more than max allowed of 2"},
	}
	for _, tc := range cases {
		got, err := clusterCIDRs(tc.flag)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("clusterCIDRs(%q) error %v, want %q", tc.flag, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != tc.want {
			t.Errorf("clusterCIDRs(%q) = %v, %v; want %d CIDRs", tc.flag, got, err, tc.want)
		}
	}
}

func TestSyncOutcome(t *testing.T) {
	if got := syncOutcome(true, fmt.Errorf("x")); got != "error" {
		t.Errorf("error: %q", got)
	}
	if got := syncOutcome(true, nil); got != "changed" {
		t.Errorf("changed: %q", got)
	}
	if got := syncOutcome(false, nil); got != "noop" {
		t.Errorf("noop: %q", got)
	}
}
