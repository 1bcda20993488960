package deployment

import (
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// getReplicaSetFraction is how many replicas rs gains (or, negative, loses) when d is
// resized during a rollout or while paused: its share of the new spec.replicas+maxSurge in
// proportion to the max-replicas it was sized for (d's status.replicas without the
// annotation). Scaling d to 0 removes all of rs.
func getReplicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if *d.Spec.Replicas == 0 {
		return -*rs.Spec.Replicas
	}
	maxNow := *d.Spec.Replicas + maxSurge(d)
	maxBefore, ok := maxReplicasBefore(rs)
	if !ok || maxBefore == 0 {
		// Missing or tampered annotation: the current size is the best guess, and the
		// bounds in getProportion keep the result in limits.
		maxBefore = d.Status.Replicas
		if maxBefore == 0 {
			return 0
		}
	}
	// The product is int32, as upstream.
	size := float64(*rs.Spec.Replicas*maxNow) / float64(maxBefore)
	return int32(math.Round(size)) - *rs.Spec.Replicas
}

// getProportion is rs's part of toAdd replicas (negative: to remove) when added have been
// handed out already: its fraction, never beyond what remains. Empty ReplicaSets get none.
func getProportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := getReplicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// proportionalSizes spreads a change of d's size over its active ReplicaSets (new and old)
// in proportion to their sizes, so that a resize neither hastens nor reverts a rollout.
// Growth goes to the largest and then newest first, shrinking to the largest and then
// oldest first; whatever rounding leaves over goes to the first. The result lists every
// active ReplicaSet with its size, in that order (sizes may equal the current ones: the
// replicas annotations still need updating).
func proportionalSizes(d *appsv1.Deployment, active []*appsv1.ReplicaSet) []scaleStep {
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - replicaCount(active)
	switch {
	case toAdd > 0:
		sort.Sort(bySizeNewer(active))
	case toAdd < 0:
		sort.Sort(bySizeOlder(active))
	}
	steps := make([]scaleStep, len(active))
	var added int32
	for i, rs := range active {
		p := getProportion(rs, d, toAdd, added)
		steps[i] = scaleStep{rs: rs, replicas: *rs.Spec.Replicas + p}
		added += p
	}
	if len(steps) > 0 && toAdd != 0 {
		steps[0].replicas = max(steps[0].replicas+toAdd-added, 0)
	}
	return steps
}
