package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodeutil "k8s.io/component-helpers/node/util"
)

// health is what the controller remembers of a node between syncs: when it last saw the
// node alive (a new heartbeat in its Ready condition, or a renewal of its Lease) by its own
// clock, so that skew between the kubelet and kcm does not matter.
type health struct {
	// probe is when kcm last saw the node alive.
	probe time.Time
	// readyTransition is when kcm saw the Ready condition last change.
	readyTransition time.Time
	// ready is the Ready condition as last seen, nil when the node has none.
	ready *corev1.NodeCondition
	// leaseRenew is the renewTime of the node's Lease as last seen.
	leaseRenew *metav1.MicroTime
	// leaseVersion is the resourceVersion of the Lease whose renewal was last seen, which
	// the lease circuit breaker compares with the API server's.
	leaseVersion string
	// expiry is what the node's reconcile made of its grace period running out (the lease
	// circuit breaker's verdict); a new sign of life clears it.
	expiry expiryVerdict
}

// expiryVerdict is the lease circuit breaker's verdict on a node past its grace period.
type expiryVerdict int

const (
	expiryUnjudged  expiryVerdict = iota // its reconcile has not looked yet
	expiryHeld                           // the Lease cache was found stale: the node is skipped
	expiryConfirmed                      // the API server confirmed it: Unknown
)

// observe folds a new sighting of the node (and its Lease, possibly nil) at now into prev
// (nil for a node not seen before), as upstream's tryUpdateNodeHealth does.
func observe(prev *health, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) *health {
	cur := readyCondition(&node.Status)
	next := &health{}
	switch {
	case prev == nil && cur == nil:
		// Never reported: the startup grace period counts from the node's creation.
		next.probe, next.readyTransition = node.CreationTimestamp.Time, node.CreationTimestamp.Time
	case prev == nil, prev.ready == nil && cur != nil, prev.ready != nil && cur == nil:
		next.probe, next.readyTransition = now, now
	case cur != nil && !prev.ready.LastHeartbeatTime.Equal(&cur.LastHeartbeatTime):
		next.probe, next.readyTransition = now, prev.readyTransition
		if !prev.ready.LastTransitionTime.Equal(&cur.LastTransitionTime) {
			next.readyTransition = now
		}
	default:
		next.probe, next.readyTransition = prev.probe, prev.readyTransition
	}
	if prev != nil {
		next.leaseRenew, next.leaseVersion = prev.leaseRenew, prev.leaseVersion
	}
	if cur != nil {
		next.ready = cur.DeepCopy()
	}
	if lease != nil && lease.Spec.RenewTime != nil && (next.leaseRenew == nil || next.leaseRenew.Before(lease.Spec.RenewTime)) {
		next.leaseRenew, next.leaseVersion = lease.Spec.RenewTime.DeepCopy(), lease.ResourceVersion
		next.probe = now
	}
	if prev != nil && next.probe.Equal(prev.probe) {
		next.expiry = prev.expiry
	}
	return next
}

// gracePeriod is how long a node may go unseen: the startup grace period until it has
// reported a Ready condition, the monitor grace period after.
func gracePeriod(node *corev1.Node, monitorGrace, startupGrace time.Duration) time.Duration {
	if readyCondition(&node.Status) == nil {
		return startupGrace
	}
	return monitorGrace
}

// conditionsUnknown returns the node's conditions with Ready and the pressure conditions
// set to Unknown, as upstream does for a node that stopped reporting, and whether the Ready
// condition changed. now is the transition time; conditions already Unknown keep theirs.
func conditionsUnknown(node *corev1.Node, now time.Time) ([]corev1.NodeCondition, bool) {
	out := corev1.NodeStatus{Conditions: append([]corev1.NodeCondition(nil), node.Status.Conditions...)}
	readyChanged := false
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		_, c := nodeutil.GetNodeCondition(&out, t)
		switch {
		case c == nil:
			out.Conditions = append(out.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: metav1.NewTime(now),
			})
			readyChanged = readyChanged || t == corev1.NodeReady
		case c.Status != corev1.ConditionUnknown:
			c.Status = corev1.ConditionUnknown
			c.Reason = "NodeStatusUnknown"
			c.Message = "Kubelet stopped posting node status."
			c.LastTransitionTime = metav1.NewTime(now)
			readyChanged = readyChanged || t == corev1.NodeReady
		}
	}
	return out.Conditions, readyChanged
}

// readyStatus is the node's Ready status, Unknown when it has no Ready condition.
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := readyCondition(&node.Status); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}

func readyCondition(status *corev1.NodeStatus) *corev1.NodeCondition {
	_, c := nodeutil.GetNodeCondition(status, corev1.NodeReady)
	return c
}
