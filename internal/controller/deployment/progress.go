package deployment

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hasProgressDeadline says whether d reports ProgressDeadlineExceeded (a deadline of
// MaxInt32 means none).
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// calculateStatus is d's status from its ReplicaSets: counts, observedGeneration, and the
// Available condition; the other conditions are carried over.
func calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now metav1.Time) appsv1.DeploymentStatus {
	available := availableCount(allRSs)
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualCount(allRSs),
		UpdatedReplicas:     actualCount([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyCount(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: max(replicaCount(allRSs)-available, 0),
		TerminatingReplicas: terminatingCount(allRSs),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue,
			reasonMinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse,
			reasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// deploymentComplete: all replicas updated and available, no old ones left, this
// generation observed.
func deploymentComplete(d *appsv1.Deployment, status *appsv1.DeploymentStatus) bool {
	return status.UpdatedReplicas == *d.Spec.Replicas &&
		status.Replicas == *d.Spec.Replicas &&
		status.AvailableReplicas == *d.Spec.Replicas &&
		status.ObservedGeneration >= d.Generation
}

// deploymentProgressing: compared with d's current status, new pods were added or became
// ready or available, or old pods went away.
func deploymentProgressing(d *appsv1.Deployment, status *appsv1.DeploymentStatus) bool {
	old := d.Status
	return status.UpdatedReplicas > old.UpdatedReplicas ||
		status.Replicas-status.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		status.ReadyReplicas > old.ReadyReplicas ||
		status.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut: the Progressing condition of status last changed more than
// progressDeadlineSeconds before now, or says so already. A completed rollout never times out.
func deploymentTimedOut(d *appsv1.Deployment, status *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*status, appsv1.DeploymentProgressing)
	switch {
	case c == nil || c.Reason == reasonNewRSAvailable:
		return false
	case c.Reason == reasonTimedOut:
		return true
	}
	deadline := time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	return c.LastUpdateTime.Add(deadline).Before(now)
}

// rolloutStatus is d's status during a rollout: calculateStatus plus the Progressing
// condition (complete, progressing, or timed out) and the ReplicaFailure copied from its
// ReplicaSets.
func rolloutStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	mnow := metav1.NewTime(now)
	status := calculateStatus(allRSs, newRS, d, mnow)
	if !hasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}
	// A resync after the rollout completed estimates nothing.
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	completed := status.Replicas == status.UpdatedReplicas && cur != nil && cur.Reason == reasonNewRSAvailable
	subject := fmt.Sprintf("Deployment %q", d.Name)
	if newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
	}
	if hasProgressDeadline(d) && !completed {
		switch {
		case deploymentComplete(d, &status):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
				reasonNewRSAvailable, subject+" has successfully progressed.", mnow))
		case deploymentProgressing(d, &status):
			// Progress refreshes lastUpdateTime even with the same reason, so it is not
			// left to setCondition.
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
				reasonReplicaSetUpdated, subject+" is progressing.", mnow)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			setCondition(&status, c)
		case deploymentTimedOut(d, &status, now):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse,
				reasonTimedOut, subject+" has timed out progressing.", mnow))
		}
	}
	if failure := replicaFailure(allRSs, newRS); failure != nil {
		setCondition(&status, *failure)
	} else {
		removeCondition(&status, appsv1.DeploymentReplicaFailure)
	}
	return status
}

// progressCheckAfter is when d needs a sync to check its progress deadline, given its new
// status: the Progressing condition's lastUpdateTime plus the deadline, and a second for
// clock skew. 0 means no check is needed (no deadline, rollout complete or timed out).
func progressCheckAfter(d *appsv1.Deployment, status *appsv1.DeploymentStatus, now time.Time) time.Duration {
	c := getCondition(*status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || c == nil {
		return 0
	}
	if deploymentComplete(d, status) || c.Reason == reasonTimedOut || c.Reason == reasonNewRSAvailable {
		return 0
	}
	after := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		// Due now: check again shortly, the next sync settles it either way.
		return time.Second
	}
	return after + time.Second
}

// pausedCondition is the Progressing condition that pausing or resuming d calls for, or nil:
// Unknown/DeploymentPaused while paused, Unknown/DeploymentResumed once resumed, so that the
// time spent paused never counts against the progress deadline. A timeout already reported
// stays.
func pausedCondition(d *appsv1.Deployment, now metav1.Time) *appsv1.DeploymentCondition {
	if !hasProgressDeadline(d) {
		return nil
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == reasonTimedOut {
		return nil
	}
	pausedNow := cur != nil && cur.Reason == reasonPaused
	switch {
	case d.Spec.Paused && !pausedNow:
		c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, "Deployment is paused", now)
		return &c
	case !d.Spec.Paused && pausedNow:
		c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonResumed, "Deployment is resumed", now)
		return &c
	}
	return nil
}
