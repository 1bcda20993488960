package deployment

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Annotations the controller writes, as upstream.
const (
	// RevisionAnnotation is the rollout sequence number of a ReplicaSet, copied to its
	// Deployment for the new ReplicaSet.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the older revisions a ReplicaSet served (rollbacks).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is spec.replicas of the Deployment when it last sized the
	// ReplicaSet: a different value means a scaling event.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas+maxSurge at that time, the base of proportional
	// scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"

	// maxRevisionHistoryChars bounds the revision-history annotation (about 100 revisions).
	maxRevisionHistoryChars = 2000
)

// annotationsToSkip are the Deployment annotations never copied to its ReplicaSets, nor
// back from a ReplicaSet on rollback.
var annotationsToSkip = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:                 true,
	RevisionHistoryAnnotation:          true,
	DesiredReplicasAnnotation:          true,
	MaxReplicasAnnotation:              true,
	appsv1.DeprecatedRollbackTo:        true,
}

// revision is the ReplicaSet's revision, 0 without the annotation.
func revision(rs *appsv1.ReplicaSet) (int64, error) {
	v, ok := rs.Annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among rss, skipping unparsable ones.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range rss {
		if v, err := revision(rs); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// lastRevision is the second highest revision among rss: the one before the current.
func lastRevision(rss []*appsv1.ReplicaSet) int64 {
	var highest, second int64
	for _, rs := range rss {
		v, err := revision(rs)
		switch {
		case err != nil:
		case v >= highest:
			second, highest = highest, v
		case v > second:
			second = v
		}
	}
	return second
}

// copyDeploymentAnnotations copies d's annotations, but the skipped ones, to rs, and says
// whether any changed.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if cur, ok := rs.Annotations[k]; annotationsToSkip[k] || (ok && cur == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setNewReplicaSetAnnotations brings the new ReplicaSet's annotations up to date: d's
// annotations, revision raised to newRevision (recording the previous one in
// revision-history when it had one: a rollback), and, for a ReplicaSet about to be created
// (!exists), the replicas annotations. It says whether anything changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool, historyLimitChars int) bool {
	changed := copyDeploymentAnnotations(d, rs)
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldRev < newRev {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			if history, ok := appendRevisionHistory(rs.Annotations[RevisionHistoryAnnotation], oldRevision, historyLimitChars); ok {
				rs.Annotations[RevisionHistoryAnnotation] = history
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory appends rev to a comma-separated history, dropping the oldest
// entries to stay within limitChars; ok is false when even that cannot make it fit.
func appendRevisionHistory(history, rev string, limitChars int) (string, bool) {
	if history == "" {
		return rev, true
	}
	old := strings.Split(history, ",")
	total := len(history) + len(rev) + 1
	start := 0
	for total > limitChars && start < len(old) {
		total -= len(old[start]) + 1
		start++
	}
	if total > limitChars {
		return history, false
	}
	return strings.Join(append(old[start:], rev), ","), true
}

// setReplicasAnnotations records desired and max replicas on rs; it says whether they changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(desired))
	rs.Annotations[MaxReplicasAnnotation] = strconv.Itoa(int(maxReplicas))
	return true
}

// replicasAnnotationsNeedUpdate says whether rs's replicas annotations differ from these.
func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

// nonNegativeAnnotation parses an annotation holding a non-negative int32.
func nonNegativeAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool, error) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false, err
	}
	if n > math.MaxInt32 {
		return 0, false, fmt.Errorf("value %d is out of range (higher than %d)", n, math.MaxInt32)
	}
	return int32(n), true, nil
}

// desiredReplicas is the desired-replicas annotation, when valid.
func desiredReplicas(rs *appsv1.ReplicaSet) (int32, bool) {
	n, ok, _ := nonNegativeAnnotation(rs, DesiredReplicasAnnotation)
	return n, ok
}

// maxReplicasBefore is the max-replicas annotation, when valid.
func maxReplicasBefore(rs *appsv1.ReplicaSet) (int32, bool) {
	n, ok, _ := nonNegativeAnnotation(rs, MaxReplicasAnnotation)
	return n, ok
}

// setDeploymentRevision sets d's revision annotation; it says whether it changed.
func setDeploymentRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == rev {
		return false
	}
	d.Annotations[RevisionAnnotation] = rev
	return true
}

// setAnnotationsFromReplicaSet replaces d's annotations, but the skipped ones, with those of
// the ReplicaSet it rolls back to.
func setAnnotationsFromReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if annotationsToSkip[k] {
			kept[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !annotationsToSkip[k] {
			kept[k] = v
		}
	}
	d.Annotations = kept
}

// rollbackTo is the revision the deprecated rollback annotation asks for (0: the previous
// one), or nil when absent or not a number. Upstream v1.37 still honours it.
func rollbackTo(d *appsv1.Deployment) *int64 {
	v := d.Annotations[appsv1.DeprecatedRollbackTo]
	if v == "" {
		return nil
	}
	rev, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &rev
}
