package servicelb

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// The decisions of upstream's service controller (k8s.io/cloud-provider v0.37.1,
// controllers/service/controller.go), as pure functions: which Services it serves, when a
// load balancer must be cleaned up or synced again, and which nodes a load balancer sends
// traffic to.

// toBeDeletedTaint is the taint the cluster autoscaler puts on a node it is about to delete;
// such a node gets no new load balancer traffic (upstream's ToBeDeletedTaint).
const toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// wantsLoadBalancer reports whether the controller serves svc: type LoadBalancer without a
// spec.loadBalancerClass, as upstream's, or with the provider's own class (class; empty when
// the provider has none) — kcm's pool serves both.
func wantsLoadBalancer(svc *corev1.Service, class string) bool {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	c := svc.Spec.LoadBalancerClass
	return c == nil || (class != "" && *c == class)
}

// needsCleanup reports whether svc's load balancer must be deleted as its finalizer says:
// the Service is being deleted or is no longer of type LoadBalancer.
func needsCleanup(svc *corev1.Service) bool {
	if !servicehelper.HasLBFinalizer(svc) {
		return false
	}
	return svc.DeletionTimestamp != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer
}

// needsUpdate reports whether a change from old to cur is one a load balancer depends on,
// so that the Service must be synced again (upstream's needsUpdate: status, finalizers and
// labels are not among them).
func needsUpdate(old, cur *corev1.Service, class string) bool {
	oldWants, curWants := wantsLoadBalancer(old, class), wantsLoadBalancer(cur, class)
	if !oldWants && !curWants {
		return false
	}
	if oldWants != curWants {
		return true
	}
	o, c := &old.Spec, &cur.Spec
	switch {
	case !reflect.DeepEqual(o.LoadBalancerSourceRanges, c.LoadBalancerSourceRanges),
		!portsEqualForLB(o.Ports, c.Ports),
		o.SessionAffinity != c.SessionAffinity,
		!reflect.DeepEqual(o.SessionAffinityConfig, c.SessionAffinityConfig),
		o.LoadBalancerIP != c.LoadBalancerIP,
		!slices.Equal(o.ExternalIPs, c.ExternalIPs),
		!reflect.DeepEqual(old.Annotations, cur.Annotations),
		old.UID != cur.UID,
		o.ExternalTrafficPolicy != c.ExternalTrafficPolicy,
		o.HealthCheckNodePort != c.HealthCheckNodePort,
		// The primary family cannot change; only adding or removing the secondary one can.
		len(o.IPFamilies) != len(c.IPFamilies):
		return true
	}
	return false
}

// portsEqualForLB compares the ports as a load balancer sees them, in order.
func portsEqualForLB(x, y []corev1.ServicePort) bool {
	return slices.EqualFunc(x, y, func(a, b corev1.ServicePort) bool {
		return a.Name == b.Name && a.Protocol == b.Protocol && a.Port == b.Port &&
			a.NodePort == b.NodePort && a.TargetPort == b.TargetPort &&
			reflect.DeepEqual(a.AppProtocol, b.AppProtocol)
	})
}

// nodeIncluded: a node takes load balancer traffic unless labelled
// node.kubernetes.io/exclude-from-external-load-balancers with a true value (or a value
// that is not a boolean).
func nodeIncluded(node *corev1.Node) bool {
	v, ok := node.Labels[corev1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	exclude, err := strconv.ParseBool(v)
	return err == nil && !exclude
}

// nodeUntainted: a node the cluster autoscaler is deleting takes no new traffic.
func nodeUntainted(node *corev1.Node) bool {
	return !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == toBeDeletedTaint })
}

// inStableSet is upstream's stableNodeSetPredicates: not being deleted, not excluded, not
// being removed by the autoscaler. Readiness is deliberately not among them, so that a
// flapping node does not reprogram every load balancer.
func inStableSet(node *corev1.Node) bool {
	return node.DeletionTimestamp.IsZero() && nodeIncluded(node) && nodeUntainted(node)
}

// stableNodes are the nodes handed to the provider, sorted by name so that the same set is
// the same list.
func stableNodes(nodes []corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(nodes))
	for i := range nodes {
		if inStableSet(&nodes[i]) {
			out = append(out, &nodes[i])
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// shouldSyncUpdatedNode reports whether a node's update may change load balancers' node
// sets: its exclusion label or its provider ID changed. (A node's other changes, including
// the autoscaler's taint, wait for the next sync, as upstream.)
func shouldSyncUpdatedNode(old, cur *corev1.Node) bool {
	return nodeIncluded(old) != nodeIncluded(cur) || old.Spec.ProviderID != cur.Spec.ProviderID
}

// nodesSufficientlyEqual reports whether two node sets are the same for a load balancer: the
// same names with the same provider IDs.
func nodesSufficientlyEqual(old, cur []*corev1.Node) bool {
	if len(old) != len(cur) {
		return false
	}
	ids := make(map[string]string, len(old))
	for _, n := range old {
		ids[n.Name] = n.Spec.ProviderID
	}
	for _, n := range cur {
		id, ok := ids[n.Name]
		if !ok || id != n.Spec.ProviderID {
			return false
		}
	}
	return true
}

// loggableNodeNames are at most maxNodeNamesToLog node names, and how many more there are.
func loggableNodeNames(nodes []*corev1.Node) []string {
	const maxNodeNamesToLog = 20
	names := make([]string, 0, min(len(nodes), maxNodeNamesToLog)+1)
	for i, n := range nodes {
		if i == maxNodeNamesToLog {
			names = append(names, "<"+strconv.Itoa(len(nodes)-maxNodeNamesToLog)+" more>")
			break
		}
		names = append(names, n.Name)
	}
	return names
}

// waitingForAddress reports whether svc is served and has no address yet: after a release,
// such Services are synced again at once (kcm's addition for an address pool).
func waitingForAddress(svc *corev1.Service, class string) bool {
	return wantsLoadBalancer(svc, class) && svc.DeletionTimestamp == nil && len(svc.Status.LoadBalancer.Ingress) == 0
}
