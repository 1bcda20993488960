package noderoute

import (
	"net"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	nodeutil "k8s.io/component-helpers/node/util"
	netutils "k8s.io/utils/net"
)

// action is what one reconcile does about one of a node's pod CIDRs: upstream's route actions.
type action string

const (
	// keep: a route to the node exists for the CIDR (with the node's current addresses, when
	// the provider routes by address).
	keep action = "keep"
	// add: no route exists for the CIDR; one is created.
	add action = "add"
	// update: a route exists but to the node's former addresses: it is deleted, then created.
	update action = "update"
)

// creation is a route to create: to node, for one of its pod CIDRs, named after the node's
// UID (the hint upstream gives the provider).
type creation struct {
	node     *corev1.Node
	nameHint string
	route    *cloudprovider.Route
}

// plan is one reconcile's work, decided from the nodes and the provider's routes alone.
type plan struct {
	// deletes are the routes in the cluster CIDRs that no node's pod CIDR needs as they are:
	// blackholes, routes to nodes that are gone or no longer have the CIDR, routes to a
	// node's former addresses.
	deletes []*cloudprovider.Route
	// creates are the routes the nodes' pod CIDRs lack.
	creates []creation
	// actions are, per node the reconcile speaks for (one with pod CIDRs or a route to it),
	// the action for each of its pod CIDRs; a node with routes and no pod CIDR has an empty
	// map. A node missing here is left alone.
	actions map[types.NodeName]map[string]action
}

// planRoutes compares the nodes' spec.podCIDRs with the provider's routes as upstream's
// route controller does. Only routes whose destination lies in one of clusterCIDRs are ever
// deleted: the others belong to someone else.
func planRoutes(nodes []*corev1.Node, routes []*cloudprovider.Route, clusterCIDRs []*net.IPNet) plan {
	p := plan{actions: map[types.NodeName]map[string]action{}}
	byNode := map[types.NodeName][]*cloudprovider.Route{}
	for _, rt := range routes {
		if rt.TargetNode == "" {
			continue
		}
		byNode[rt.TargetNode] = append(byNode[rt.TargetNode], rt)
		if p.actions[rt.TargetNode] == nil {
			p.actions[rt.TargetNode] = map[string]action{}
		}
	}
	for _, node := range nodes {
		if len(node.Spec.PodCIDRs) == 0 {
			continue // not given a CIDR yet
		}
		name := types.NodeName(node.Name)
		if p.actions[name] == nil {
			p.actions[name] = map[string]action{}
		}
		for _, cidr := range node.Spec.PodCIDRs {
			p.actions[name][cidr] = routeAction(byNode[name], cidr, node.Status.Addresses)
		}
	}
	for _, rt := range routes {
		if !responsibleFor(rt, clusterCIDRs) {
			continue
		}
		if a, ok := p.actions[rt.TargetNode][rt.DestinationCIDR]; rt.Blackhole || !ok || a == update {
			p.deletes = append(p.deletes, rt)
		}
	}
	for _, node := range nodes {
		for _, cidr := range node.Spec.PodCIDRs {
			if a := p.actions[types.NodeName(node.Name)][cidr]; a == keep {
				continue
			}
			p.creates = append(p.creates, creation{
				node:     node,
				nameHint: string(node.UID),
				route: &cloudprovider.Route{
					TargetNode:          types.NodeName(node.Name),
					TargetNodeAddresses: node.Status.Addresses,
					DestinationCIDR:     cidr,
				},
			})
		}
	}
	return p
}

// routeAction is keep when one of the node's routes is for cidr (and, when the provider
// routes by address, to the node's current addresses), update when it is to other
// addresses, add when there is none.
func routeAction(nodeRoutes []*cloudprovider.Route, cidr string, addrs []corev1.NodeAddress) action {
	for _, rt := range nodeRoutes {
		if rt.DestinationCIDR != cidr {
			continue
		}
		if !rt.EnableNodeAddresses || sameAddresses(addrs, rt.TargetNodeAddresses) {
			return keep
		}
		return update
	}
	return add
}

// sameAddresses: the same number of addresses, each of a found in b (upstream's comparison).
func sameAddresses(a, b []corev1.NodeAddress) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if reflect.DeepEqual(x, y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// responsibleFor: the route's destination starts or ends inside one of the cluster CIDRs.
// A destination that does not parse is never the controller's.
func responsibleFor(rt *cloudprovider.Route, clusterCIDRs []*net.IPNet) bool {
	_, cidr, err := netutils.ParseCIDRSloppy(rt.DestinationCIDR)
	if err != nil {
		return false
	}
	last := make(net.IP, len(cidr.IP))
	for i := range last {
		last[i] = cidr.IP[i] | ^cidr.Mask[i]
	}
	for _, c := range clusterCIDRs {
		if c.Contains(cidr.IP) || c.Contains(last) {
			return true
		}
	}
	return false
}

// routesCreated says, once the creations are done, whether the node's network is available:
// false for a node with routes but no pod CIDR, or with a pod CIDR still without its route.
// ok is false for a node the reconcile does not speak for.
func routesCreated(actions map[string]action, known bool) (created, ok bool) {
	if !known {
		return false, false
	}
	for _, a := range actions {
		if a == add || a == update {
			return false, true
		}
	}
	return len(actions) != 0, true
}

// Upstream's NetworkUnavailable condition, as the route controller writes it.
const (
	reasonRouteCreated   = "RouteCreated"
	messageRouteCreated  = "RouteController created a route"
	reasonNoRouteCreated = "NoRouteCreated"
	messageNoRoute       = "RouteController failed to create a route"
)

// networkCondition is the NetworkUnavailable condition a node gets (without times).
func networkCondition(created bool) corev1.NodeCondition {
	if created {
		return corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse,
			Reason: reasonRouteCreated, Message: messageRouteCreated}
	}
	return corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue,
		Reason: reasonNoRouteCreated, Message: messageNoRoute}
}

// conditionCurrent: the node's NetworkUnavailable already has the status and reason it would
// be given, so it is not written (upstream compares those two, not the message).
func conditionCurrent(node *corev1.Node, created bool) bool {
	_, c := nodeutil.GetNodeCondition(&node.Status, corev1.NodeNetworkUnavailable)
	want := networkCondition(created)
	return c != nil && c.Status == want.Status && c.Reason == want.Reason
}
