package nodelifecycle

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/topology"
)

// ZoneStateOf is the state the zone passes last gave the node's zone ("" before the first
// pass that saw it), for the suite's waits.
func (r *Reconciler) ZoneStateOf(node *corev1.Node) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.zoneStates[topology.GetZoneKey(node)])
}
