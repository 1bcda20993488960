package deployment

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// resolveFenceposts turns maxSurge and maxUnavailable into numbers of pods for desired
// replicas: a percentage of surge rounds up, of unavailability down. When both come to 0,
// unavailability is 1, so that a rollout can always progress (surge may be blocked by quota).
func resolveFenceposts(surge, unavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(surge, intstr.FromInt32(0)), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(unavailable, intstr.FromInt32(0)), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// rollingParams are d's maxSurge and maxUnavailable; validation rejects the values that
// would make this fail, so an error counts as 0 as upstream.
func rollingParams(d *appsv1.Deployment) (int32, int32) {
	ru := d.Spec.Strategy.RollingUpdate
	if ru == nil {
		ru = &appsv1.RollingUpdateDeployment{}
	}
	s, u, _ := resolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, *d.Spec.Replicas)
	return s, u
}

// maxSurge is how many pods above spec.replicas a rolling Deployment may run (0 for Recreate).
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, _ := rollingParams(d)
	return s
}

// maxUnavailable is how many of spec.replicas a rolling Deployment may lack (0 for Recreate
// and for 0 replicas), never more than spec.replicas.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || *d.Spec.Replicas == 0 {
		return 0
	}
	_, u := rollingParams(d)
	return min(u, *d.Spec.Replicas)
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now: for RollingUpdate as far
// as spec.replicas+maxSurge pods in all ReplicaSets allows, never beyond spec.replicas; for
// Recreate spec.replicas.
//
// The pods counted are what each old ReplicaSet still has, not only what it was told to keep:
// upstream sums spec.replicas, so when an old ReplicaSet has been scaled down but its
// controller's pod deletions are slow (throttled, failing, retried), upstream grows the new
// ReplicaSet at once and the Deployment runs more than spec.replicas+maxSurge pods
// (test/chaos's 429 storm showed 7 live pods for 4+2). kcm waits until the old pods are gone
// from the old ReplicaSet's status.replicas, which its controller writes as soon as its
// deletions land: maxSurge bounds pods, as the Deployment API promises.
func newRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		var surgeValue *intstr.IntOrString
		if d.Spec.Strategy.RollingUpdate != nil {
			surgeValue = d.Spec.Strategy.RollingUpdate.MaxSurge
		}
		surge, err := intstr.GetScaledValueFromIntOrPercent(surgeValue, int(*d.Spec.Replicas), true)
		if err != nil {
			return 0, err
		}
		current := podsStillThere(allRSs, newRS)
		maxTotal := *d.Spec.Replicas + int32(surge)
		if current >= maxTotal {
			return *newRS.Spec.Replicas, nil
		}
		up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
		return *newRS.Spec.Replicas + up, nil
	case appsv1.RecreateDeploymentStrategyType:
		return *d.Spec.Replicas, nil
	default:
		return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
	}
}

// scaleStep is one ReplicaSet resize a decision asks for.
type scaleStep struct {
	rs       *appsv1.ReplicaSet
	replicas int32
}

// maxScaledDown is how many old replicas a rolling update may remove now: the pods above
// the minimum availability, not counting the new ReplicaSet's unavailable pods (removing old
// pods for them would lower availability further).
func maxScaledDown(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	return replicaCount(allRSs) - minAvailable - newUnavailable
}

// unhealthyCleanup scales old ReplicaSets, oldest first, down by their unavailable
// replicas, at most limit in all: removing pods that are not available costs no
// availability, and lets a rollout stuck on them continue. It sorts oldRSs.
//
// An old ReplicaSet reporting more available pods than it wants has a status older than its
// last scale-down: as upstream, that is an invalid request, and the error (with the steps
// planned before it) tells the caller to scale no further old ReplicaSet in this sync, since
// the availability it would count on is not there.
func unhealthyCleanup(oldRSs []*appsv1.ReplicaSet, limit int32) ([]scaleStep, error) {
	sort.Sort(byCreation(oldRSs))
	var steps []scaleStep
	var total int32
	for _, rs := range oldRSs {
		if total >= limit {
			break
		}
		if *rs.Spec.Replicas == 0 || *rs.Spec.Replicas == rs.Status.AvailableReplicas {
			continue
		}
		n := min(limit-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas)
		if n < 0 {
			return steps, fmt.Errorf("when cleaning up unhealthy replicas, got invalid request to scale down %s/%s %d -> %d",
				rs.Namespace, rs.Name, *rs.Spec.Replicas, *rs.Spec.Replicas-n)
		}
		steps = append(steps, scaleStep{rs: rs, replicas: *rs.Spec.Replicas - n})
		total += n
	}
	return steps, nil
}

// oldScaleDown scales old ReplicaSets, oldest first, down by the available pods above
// spec.replicas-maxUnavailable. It sorts oldRSs.
func oldScaleDown(d *appsv1.Deployment, allRSs, oldRSs []*appsv1.ReplicaSet) []scaleStep {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := availableCount(allRSs)
	if available <= minAvailable {
		return nil
	}
	sort.Sort(byCreation(oldRSs))
	var steps []scaleStep
	var total int32
	want := available - minAvailable
	for _, rs := range oldRSs {
		if total >= want {
			break
		}
		if *rs.Spec.Replicas == 0 {
			continue
		}
		n := min(*rs.Spec.Replicas, want-total)
		steps = append(steps, scaleStep{rs: rs, replicas: *rs.Spec.Replicas - n})
		total += n
	}
	return steps
}

// podsStillThere sums, over the Deployment's ReplicaSets, the pods each may still have: the
// new one's spec.replicas (its pods being created count at once), and for an old one the
// larger of spec.replicas and status.replicas (pods its controller has not deleted yet).
func podsStillThere(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range allRSs {
		switch {
		case rs == nil:
		case rs == newRS || rs.UID == newRS.UID && rs.UID != "":
			n += *rs.Spec.Replicas
		default:
			n += max(*rs.Spec.Replicas, rs.Status.Replicas)
		}
	}
	return n
}
