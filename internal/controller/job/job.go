package job

import (
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerName is upstream's controller name, the reporting controller of its Events.
const ControllerName = "job-controller"

// Production values, as upstream (pkg/controller/job/job_controller.go).
const (
	// DefaultPodFailureBackoff is the delay before recreating a pod after the first failure;
	// it doubles with each consecutive failure.
	DefaultPodFailureBackoff = 10 * time.Second
	// DefaultMaxPodFailureBackoff caps the pod failure backoff.
	DefaultMaxPodFailureBackoff = 10 * time.Minute
	// DefaultBatchPeriod is how long pod events and status-only Job updates wait, so that a
	// burst of them ends in one sync.
	DefaultBatchPeriod = time.Second
	// MaxUncountedPods caps status.uncountedTerminatedPods (about 20 KB of UIDs), which also
	// caps the finalizers removed per sync.
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync caps the pods created or deleted in one sync.
	MaxPodCreateDeletePerSync = 500
	// apiBackoff and maxAPIBackoff bound the retry delay of a failing sync.
	apiBackoff    = time.Second
	maxAPIBackoff = time.Minute
)

const (
	completionIndexEnv     = "JOB_COMPLETION_INDEX"
	unknownCompletionIndex = -1
	// maxGeneratedNameLength is the longest generateName the API server keeps whole
	// (63 characters less the 5 random ones).
	maxGeneratedNameLength = 58
)

var jobGVK = batchv1.SchemeGroupVersion.WithKind("Job")

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool { return job.Spec.BackoffLimitPerIndex != nil }

func isSuspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }

// onlyReplaceFailedPods reports podReplacementPolicy Failed: a terminating pod is neither
// replaced nor counted as failed until it reaches the Failed phase.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	return job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed
}

// managedByOther reports whether spec.managedBy hands the Job to another controller.
func managedByOther(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName
}

// isFinished reports whether the Job has its terminal condition, Complete or Failed.
func isFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// isPodFailed reports whether a pod counts as failed: phase Failed or, unless only failed
// pods are replaced, deleted before it succeeded (an orphan never reaches a phase).
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// completionIndex is the pod's completion index annotation, unknownCompletionIndex when
// absent, malformed or negative.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return unknownCompletionIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return unknownCompletionIndex
	}
	return i
}

// validIndex returns the pod's completion index when it is within [0, completions).
func validIndex(p *corev1.Pod, job *batchv1.Job) (int, bool) {
	ix := completionIndex(p)
	return ix, ix != unknownCompletionIndex && job.Spec.Completions != nil && ix < int(*job.Spec.Completions)
}

func findCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func conditionTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	if c := findCondition(conds, t); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type: t, Status: status, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	}
}

// setCondition adds or updates the condition of type t and reports whether the list
// changed. A False condition is never added where none was: absence already says so.
func setCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(conds, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return conds, false
		}
		*c = *newCondition(t, status, reason, message, now)
		return conds, true
	}
	if status == corev1.ConditionFalse {
		return conds, false
	}
	return append(conds, *newCondition(t, status, reason, message, now)), true
}
