package nodelifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// zoneState is upstream's classification of a zone by the health of its nodes.
type zoneState string

const (
	stateInitial           zoneState = "Initial"
	stateNormal            zoneState = "Normal"
	stateFullDisruption    zoneState = "FullDisruption"
	statePartialDisruption zoneState = "PartialDisruption"
)

// excludeDisruptionLabel keeps a node out of zone health accounting.
const excludeDisruptionLabel = "node.kubernetes.io/exclude-disruption"

// computeZoneState classifies a zone from the Ready status of its nodes: no ready node is a
// full disruption; more than two not-ready nodes making at least unhealthyThreshold of the
// zone is a partial one.
func computeZoneState(ready []corev1.ConditionStatus, unhealthyThreshold float32) zoneState {
	readyNodes, notReady := 0, 0
	for _, s := range ready {
		if s == corev1.ConditionTrue {
			readyNodes++
		} else {
			notReady++
		}
	}
	switch {
	case readyNodes == 0 && notReady > 0:
		return stateFullDisruption
	case notReady > 2 && float32(notReady)/float32(notReady+readyNodes) >= unhealthyThreshold:
		return statePartialDisruption
	default:
		return stateNormal
	}
}

// evictionRates are the NoExecute tainting settings of the command line.
type evictionRates struct {
	primary, secondary     float32 // --node-eviction-rate, --secondary-node-eviction-rate
	largeClusterThreshold  int32   // --large-cluster-size-threshold
	unhealthyZoneThreshold float32 // --unhealthy-zone-threshold
}

// zoneRate is how many nodes per second a zone in state may have tainted NoExecute: the
// primary rate when healthy; in a partial disruption the secondary rate, or none at all in
// a small cluster; in a full disruption the primary rate (a whole zone down is more likely
// the zone's network than its nodes, and other zones go on).
func zoneRate(state zoneState, zoneSize int, r evictionRates) float32 {
	switch state {
	case statePartialDisruption:
		if int32(zoneSize) > r.largeClusterThreshold {
			return r.secondary
		}
		return 0
	default:
		return r.primary
	}
}

// disruptionMode says whether a zone pass enters or leaves upstream's master disruption
// mode, in which every zone is fully disrupted.
type disruptionMode int

const (
	modeUnchanged disruptionMode = iota
	// modeEnter: every zone has just become fully disrupted. The problem is most likely the
	// control plane's own view of the cluster, so all NoExecute tainting stops (every rate
	// 0) and the NoExecute taints come off every node.
	modeEnter
	// modeLeave: some node is ready again after master disruption mode. Every node gets a
	// fresh grace period, counted from now.
	modeLeave
)

// zonePlan is what one zone pass decides.
type zonePlan struct {
	// states are the zones' new states; a zone with no node left is gone.
	states map[string]zoneState
	// rates are the NoExecute tainting rates to set, for the zones whose rate changes.
	rates map[string]float32
	mode  disruptionMode
	// changed are the zones whose state changed outside the mode changes, sorted, for logs.
	changed []string
}

// planZones is upstream's handleDisruption as a pure function: from the zones' previous
// states and the Ready status (as kcm knows it now) of the nodes counted in each zone, it
// computes the zones' new states and the rates to set. A zone seen for the first time
// starts Initial, so that it counts as not fully disrupted before this pass.
func planZones(prev map[string]zoneState, ready map[string][]corev1.ConditionStatus, s evictionRates) zonePlan {
	plan := zonePlan{states: make(map[string]zoneState, len(ready)), rates: map[string]float32{}}
	next := make(map[string]zoneState, len(ready))
	allAre, allWas := true, true
	for k, statuses := range ready {
		next[k] = computeZoneState(statuses, s.unhealthyZoneThreshold)
		allAre = allAre && next[k] == stateFullDisruption
		was, seen := prev[k]
		if !seen {
			was = stateInitial
		}
		plan.states[k] = was
		allWas = allWas && was == stateFullDisruption
	}
	switch {
	case allAre && allWas:
		// Still all down (or no zone at all): nothing changes.
	case allAre:
		plan.mode = modeEnter
		for k := range plan.states {
			plan.states[k], plan.rates[k] = stateFullDisruption, 0
		}
	case allWas:
		plan.mode = modeLeave
		for k := range plan.states {
			plan.states[k], plan.rates[k] = next[k], zoneRate(next[k], len(ready[k]), s)
		}
	default:
		for k := range plan.states {
			if plan.states[k] == next[k] {
				continue
			}
			plan.states[k], plan.rates[k] = next[k], zoneRate(next[k], len(ready[k]), s)
			plan.changed = append(plan.changed, k)
		}
		slices.Sort(plan.changed)
	}
	return plan
}
