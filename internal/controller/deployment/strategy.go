package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// rolloutRolling is one step of a RollingUpdate: grow the new ReplicaSet as far as maxSurge
// allows, else shrink the old ones as far as maxUnavailable allows, else (rollout complete)
// clean up the history; then status.
func (s *syncer) rolloutRolling(ctx context.Context, rsList []*appsv1.ReplicaSet) (time.Duration, error) {
	newRS, oldRSs, err := s.newAndOldReplicaSets(ctx, rsList, true)
	if err != nil {
		return 0, err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledUp, err := s.reconcileNewReplicaSet(ctx, allRSs, newRS)
	if err != nil {
		return 0, err
	}
	if scaledUp {
		return s.syncRolloutStatus(allRSs, newRS), nil
	}
	scaledDown, err := s.reconcileOldReplicaSets(ctx, allRSs, filterActive(oldRSs), newRS)
	if err != nil {
		return 0, err
	}
	if scaledDown {
		return s.syncRolloutStatus(allRSs, newRS), nil
	}
	if deploymentComplete(s.d, &s.d.Status) {
		if err := s.cleanup(ctx, oldRSs); err != nil {
			return 0, err
		}
	}
	return s.syncRolloutStatus(allRSs, newRS), nil
}

// reconcileNewReplicaSet sizes the new ReplicaSet: down to spec.replicas if above, else up
// as far as newRSNewReplicas allows. It reports whether the size changed.
func (s *syncer) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (bool, error) {
	want := *s.d.Spec.Replicas
	if *newRS.Spec.Replicas == want {
		return false, nil
	}
	if *newRS.Spec.Replicas > want {
		scaled, _, err := s.scaleReplicaSet(ctx, newRS, want, false)
		return scaled, err
	}
	n, err := newRSNewReplicas(s.d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := s.scaleReplicaSet(ctx, newRS, n, false)
	return scaled, err
}

// reconcileOldReplicaSets shrinks the active old ReplicaSets within maxScaledDown: first
// by their unavailable pods, then by the available pods above the minimum availability.
// It reports whether any shrank.
func (s *syncer) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (bool, error) {
	if replicaCount(oldRSs) == 0 {
		return false, nil
	}
	limit := maxScaledDown(s.d, allRSs, newRS)
	if limit <= 0 {
		return false, nil
	}
	var total int32
	steps, invalid := unhealthyCleanup(oldRSs, limit)
	for _, step := range steps {
		_, scaled, err := s.scaleReplicaSet(ctx, step.rs, step.replicas, false)
		if err != nil {
			return total > 0, err
		}
		total += *step.rs.Spec.Replicas - step.replicas
		for i := range oldRSs {
			if oldRSs[i] == step.rs {
				oldRSs[i] = scaled
			}
		}
	}
	if invalid != nil {
		// An old ReplicaSet's status lags its size: wait for it, as upstream.
		log.FromContext(ctx).V(4).Info("Not scaling down old replica sets", "reason", invalid.Error())
		return false, nil
	}
	allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	for _, step := range oldScaleDown(s.d, allRSs, oldRSs) {
		if _, _, err := s.scaleReplicaSet(ctx, step.rs, step.replicas, false); err != nil {
			return total > 0, err
		}
		total += *step.rs.Spec.Replicas - step.replicas
	}
	return total > 0, nil
}

// rolloutRecreate is one step of a Recreate rollout: scale every old ReplicaSet to 0; once
// no old pod is left (terminating ones included), create the new ReplicaSet and give it
// spec.replicas; when complete, clean up the history; then status.
func (s *syncer) rolloutRecreate(ctx context.Context, rsList []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) (time.Duration, error) {
	// The new ReplicaSet is not created yet: it must not scale up before the old ones are down.
	newRS, oldRSs, err := s.newAndOldReplicaSets(ctx, rsList, false)
	if err != nil {
		return 0, err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledDown := false
	for _, rs := range filterActive(oldRSs) {
		scaled, _, err := s.scaleReplicaSet(ctx, rs, 0, false)
		if err != nil {
			return 0, err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown || oldPodsRunning(newRS, oldRSs, pods) {
		return s.syncRolloutStatus(allRSs, newRS), nil
	}

	if newRS == nil {
		if newRS, oldRSs, err = s.newAndOldReplicaSets(ctx, rsList, true); err != nil {
			return 0, err
		}
		allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	if _, _, err := s.scaleReplicaSet(ctx, newRS, *s.d.Spec.Replicas, false); err != nil {
		return 0, err
	}
	if deploymentComplete(s.d, &s.d.Status) {
		if err := s.cleanup(ctx, oldRSs); err != nil {
			return 0, err
		}
	}
	return s.syncRolloutStatus(allRSs, newRS), nil
}
