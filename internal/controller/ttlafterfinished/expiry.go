package ttlafterfinished

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// needsCleanup reports whether a Job has finished (Complete or Failed) and has a TTL.
func needsCleanup(j *batchv1.Job) bool {
	if j.Spec.TTLSecondsAfterFinished == nil {
		return false
	}
	_, ok := finishCondition(j)
	return ok
}

func finishCondition(j *batchv1.Job) (batchv1.JobCondition, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return batchv1.JobCondition{}, false
}

// expiry is when a finished Job with a TTL expires: ttlSecondsAfterFinished after the
// lastTransitionTime of its Complete or Failed condition. ok is false for a Job that needs
// no cleanup (unfinished, no TTL, or already being deleted).
func expiry(j *batchv1.Job) (finishedAt, expiresAt time.Time, ok bool, err error) {
	if j.DeletionTimestamp != nil || !needsCleanup(j) {
		return time.Time{}, time.Time{}, false, nil
	}
	c, _ := finishCondition(j)
	if c.LastTransitionTime.IsZero() {
		return time.Time{}, time.Time{}, false, fmt.Errorf("unable to find the time when the Job %s/%s finished", j.Namespace, j.Name)
	}
	finishedAt = c.LastTransitionTime.Time
	return finishedAt, finishedAt.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true, nil
}
