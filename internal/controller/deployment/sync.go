package deployment

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/history"
)

// newAndOldReplicaSets splits rsList into the new ReplicaSet (the one with d's template)
// and the old ones, bringing the new one's annotations and d's revision up to date. With
// create, a missing new ReplicaSet is created. rsList is updated with what was written.
func (s *syncer) newAndOldReplicaSets(ctx context.Context, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	old := findOldReplicaSets(s.d, rsList)
	newRS, err := s.newReplicaSet(ctx, rsList, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

// newReplicaSet is upstream's getNewReplicaSet: the existing new ReplicaSet, its revision
// raised above every old one, or (with create) a new ReplicaSet named after the template's
// hash. A name taken by a ReplicaSet with another template is a hash collision: the
// collision count goes up and the sync fails, to retry with another hash.
func (s *syncer) newReplicaSet(ctx context.Context, rsList, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	d := s.d
	now := metav1.NewTime(s.now)
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)

	if existing := findNewReplicaSet(d, rsList); existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rs, newRevision, true, maxRevisionHistoryChars)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			if err := s.Client.Update(ctx, rs); err != nil {
				return nil, err
			}
			for i := range rsList {
				if rsList[i] == existing {
					rsList[i] = rs
				}
			}
			return rs, nil
		}
		// The ReplicaSet's revision is the reliable one: d's may not have been written.
		setDeploymentRevision(d, rs.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
				reasonFoundNewRS, fmt.Sprintf("Found new replica set %q", rs.Name), now))
		}
		// Written at once, as upstream: the rest of the sync may replace the condition.
		return rs, s.writeStatus(ctx)
	}
	if !create {
		return nil, nil
	}

	rs := newReplicaSetFor(d, history.TemplateHash(&d.Spec.Template, d.Status.CollisionCount))
	replicas, err := newRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), rs), rs)
	if err != nil {
		return nil, err
	}
	*rs.Spec.Replicas = replicas
	setNewReplicaSetAnnotations(d, rs, newRevision, false, maxRevisionHistoryChars)
	created := true
	err = s.Client.Create(ctx, rs)
	switch {
	case apierrors.IsAlreadyExists(err):
		// A slow cache, or a hash collision.
		existing := &appsv1.ReplicaSet{}
		if getErr := s.Client.Get(ctx, client.ObjectKeyFromObject(rs), existing); getErr != nil {
			return nil, getErr
		}
		ref := metav1.GetControllerOfNoCopy(existing)
		if ref == nil || ref.UID != d.UID || !equalIgnoreHash(&d.Spec.Template, &existing.Spec.Template) {
			count := int32(0)
			if d.Status.CollisionCount != nil {
				count = *d.Status.CollisionCount
			}
			d.Status.CollisionCount = new(count + 1)
			log.FromContext(ctx).V(2).Info("Found a hash collision for deployment - bumping collisionCount to resolve it",
				"oldCollisionCount", count, "newCollisionCount", count+1)
			return nil, err
		}
		rs, created = existing, false
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonFailedRSCreate, msg, now))
		}
		s.Recorder.Eventf(d, nil, corev1.EventTypeWarning, reasonFailedRSCreate, "Create", "%s", msg)
		return nil, err
	}
	if created && replicas > 0 {
		s.Recorder.Eventf(d, rs, corev1.EventTypeNormal, "ScalingReplicaSet", "Scale",
			"Scaled up replica set %s from 0 to %d", rs.Name, replicas)
	}
	setDeploymentRevision(d, newRevision)
	if created && hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
			reasonNewReplicaSet, fmt.Sprintf("Created new replica set %q", rs.Name), now))
	}
	return rs, s.writeStatus(ctx)
}

// scaleReplicaSet sets rs's size to replicas with the replicas annotations of d's current
// size; without force it does nothing when the size is right already. It reports whether
// the size changed, and returns rs as written.
func (s *syncer) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, force bool) (bool, *appsv1.ReplicaSet, error) {
	if !force && *rs.Spec.Replicas == replicas {
		return false, rs, nil
	}
	d := s.d
	desired, maxReplicas := *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)
	resize := *rs.Spec.Replicas != replicas
	if !resize && !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false, rs, nil
	}
	from := *rs.Spec.Replicas
	scaled := rs.DeepCopy()
	*scaled.Spec.Replicas = replicas
	setReplicasAnnotations(scaled, desired, maxReplicas)
	if err := s.Client.Update(ctx, scaled); err != nil {
		return false, rs, err
	}
	if resize {
		direction := "up"
		if replicas < from {
			direction = "down"
		}
		s.Recorder.Eventf(d, scaled, corev1.EventTypeNormal, "ScalingReplicaSet", "Scale",
			"Scaled %s replica set %s from %d to %d", direction, scaled.Name, from, replicas)
	}
	return resize, scaled, nil
}

// scale resizes the ReplicaSets on a scaling event or while paused: the only active (or the
// newest) one takes spec.replicas; old ones go to 0 once the new one is saturated;
// otherwise a rolling Deployment's change is spread in proportion to their sizes.
func (s *syncer) scale(ctx context.Context, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	d := s.d
	if rs := findActiveOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := s.scaleReplicaSet(ctx, rs, *d.Spec.Replicas, false)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range filterActive(oldRSs) {
			if _, _, err := s.scaleReplicaSet(ctx, old, 0, false); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	for _, step := range proportionalSizes(d, filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))) {
		if _, _, err := s.scaleReplicaSet(ctx, step.rs, step.replicas, true); err != nil {
			return err
		}
	}
	return nil
}

// cleanup deletes the old ReplicaSets beyond revisionHistoryLimit that have no pods.
func (s *syncer) cleanup(ctx context.Context, oldRSs []*appsv1.ReplicaSet) error {
	for _, rs := range historyToDelete(s.d, oldRSs) {
		log.FromContext(ctx).V(4).Info("Deleting old replica set beyond the revision history limit", "replicaSet", rs.Name)
		// One at a time, stopping at the first failure, so as not to hammer the API server.
		if err := s.Client.Delete(ctx, rs, client.Preconditions{UID: &rs.UID}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// isScalingEvent: an active ReplicaSet was sized for another spec.replicas than d's.
func (s *syncer) isScalingEvent(ctx context.Context, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := s.newAndOldReplicaSets(ctx, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range filterActive(append(oldRSs, newRS)) {
		if desired, ok := desiredReplicas(rs); ok && desired != *s.d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// scaleAndSyncStatus is upstream's sync: scaling without rolling out (a scaling event, or a
// paused Deployment, which also cleans up its history), then status.
func (s *syncer) scaleAndSyncStatus(ctx context.Context, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := s.newAndOldReplicaSets(ctx, rsList, false)
	if err != nil {
		return err
	}
	if err := s.scale(ctx, newRS, oldRSs); err != nil {
		return err
	}
	if s.d.Spec.Paused && rollbackTo(s.d) == nil {
		if err := s.cleanup(ctx, oldRSs); err != nil {
			return err
		}
	}
	s.d.Status = calculateStatus(append(oldRSs, newRS), newRS, s.d, metav1.NewTime(s.now))
	return nil
}

// syncStatusOnly updates status and nothing else (a Deployment being deleted).
func (s *syncer) syncStatusOnly(ctx context.Context, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := s.newAndOldReplicaSets(ctx, rsList, false)
	if err != nil {
		return err
	}
	s.d.Status = calculateStatus(append(oldRSs, newRS), newRS, s.d, metav1.NewTime(s.now))
	return nil
}

// syncRolloutStatus sets the status of a rollout step and returns when the progress
// deadline needs checking.
func (s *syncer) syncRolloutStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) time.Duration {
	status := rolloutStatus(allRSs, newRS, s.d, s.now)
	s.d.Status = status
	return progressCheckAfter(s.d, &status, s.now)
}

// rollback handles the deprecated rollback request (annotation
// deprecated.deployment.rollback.to, still honoured by upstream v1.37): d's template is
// set to that of the requested revision (0: the previous one) and the request cleared.
func (s *syncer) rollback(ctx context.Context, rsList []*appsv1.ReplicaSet) error {
	d := s.d
	newRS, oldRSs, err := s.newAndOldReplicaSets(ctx, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(oldRSs, newRS)
	target := *rollbackTo(d)
	if target == 0 {
		if target = lastRevision(allRSs); target == 0 {
			s.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "DeploymentRollbackRevisionNotFound", "Rollback", "Unable to find last revision.")
			return s.clearRollbackTo(ctx)
		}
	}
	for _, rs := range allRSs {
		if v, err := revision(rs); err != nil || v != target {
			continue
		}
		rolledBack := false
		if !equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			d.Spec.Template.ObjectMeta = *rs.Spec.Template.ObjectMeta.DeepCopy()
			d.Spec.Template.Labels = withoutLabel(rs.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
			d.Spec.Template.Spec = *rs.Spec.Template.Spec.DeepCopy()
			// The ReplicaSet's annotations come back with its template (e.g. change-cause).
			setAnnotationsFromReplicaSet(d, rs)
			rolledBack = true
		} else {
			s.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "DeploymentRollbackTemplateUnchanged", "Rollback",
				"The rollback revision contains the same template as current deployment %q", d.Name)
		}
		err := s.clearRollbackTo(ctx)
		if rolledBack && err == nil {
			s.Recorder.Eventf(d, nil, corev1.EventTypeNormal, "DeploymentRollback", "Rollback",
				"Rolled back deployment %q to revision %d", d.Name, target)
		}
		return err
	}
	s.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "DeploymentRollbackRevisionNotFound", "Rollback", "Unable to find the revision to rollback to.")
	return s.clearRollbackTo(ctx)
}

// clearRollbackTo writes d without the rollback request, with whatever template and
// annotations the rollback chose.
func (s *syncer) clearRollbackTo(ctx context.Context) error {
	delete(s.d.Annotations, appsv1.DeprecatedRollbackTo)
	if err := s.Client.Update(ctx, s.d); err != nil {
		return err
	}
	s.written = s.d.DeepCopy()
	return nil
}
