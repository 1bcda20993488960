package nodelifecycle

import (
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

// zoneKey is upstream's zone identity: region and zone labels, "" when neither is set.
func zoneKey(node *corev1.Node) string {
	region := node.Labels[corev1.LabelTopologyRegion]
	if region == "" {
		region = node.Labels[corev1.LabelFailureDomainBetaRegion]
	}
	zone := node.Labels[corev1.LabelTopologyZone]
	if zone == "" {
		zone = node.Labels[corev1.LabelFailureDomainBetaZone]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

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

// evictionRates are the NoExecute tainting rates of the command line.
type evictionRates struct {
	primary, secondary    float32
	largeClusterThreshold int32
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
