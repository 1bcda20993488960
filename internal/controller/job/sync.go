package job

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/pod"
)

// Condition reasons and messages without an API constant, as upstream writes them.
const (
	reasonJobSuspended = "JobSuspended"
	reasonJobResumed   = "JobResumed"

	msgCompletionsReached = "Reached expected number of succeeded pods"
	msgBackoffLimit       = "Job has reached the specified backoff limit"
	msgDeadline           = "Job was active longer than specified deadline"
	msgMaxFailedIndexes   = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes      = "Job has failed indexes"
	msgSuspended          = "Job suspended"
	msgResumed            = "Job resumed"
)

// defaultBackoffLimit is the API server's default for spec.backoffLimit.
const defaultBackoffLimit = 6

// syncState is one sync's view of a Job: the working copy whose status the sync
// rewrites, its pods, and the counts and decisions derived from them.
type syncState struct {
	job  *batchv1.Job
	pods []*corev1.Pod
	// active are the pods neither finished nor being deleted.
	active []*corev1.Pod
	// expectedRmFinalizers are pods whose finalizer this controller already removed,
	// though the cache may still show it: they were counted.
	expectedRmFinalizers sets.Set[types.UID]
	// uncountedSucceeded and uncountedFailed are status.uncountedTerminatedPods as read.
	uncountedSucceeded, uncountedFailed sets.Set[types.UID]

	// succeeded and failed are the counts including pods not in status yet.
	succeeded, failed int32
	// Indexed Jobs: completed indexes before this sync and including it; failed indexes
	// (nil without backoffLimitPerIndex).
	prevSucceededIndexes, succeededIndexes intervals
	failedIndexes                          *intervals

	// finished is the condition the Job heads to (SuccessCriteriaMet, FailureTarget or,
	// when the interim condition is already written, Failed), nil while it runs.
	finished *batchv1.JobCondition

	newBackoff      backoffRecord
	delayedDeletion map[int]*corev1.Pod
	terminating     int32
	ready           int32
}

// newSyncState counts the Job's pods. job must be a copy the sync may modify.
func newSyncState(job *batchv1.Job, pods []*corev1.Pod, expectedRm sets.Set[types.UID], oldBackoff backoffRecord, now time.Time) *syncState {
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	s := &syncState{
		job:                  job,
		pods:                 pods,
		expectedRmFinalizers: expectedRm,
		uncountedSucceeded:   sets.New(job.Status.UncountedTerminatedPods.Succeeded...),
		uncountedFailed:      sets.New(job.Status.UncountedTerminatedPods.Failed...),
	}
	if s.expectedRmFinalizers == nil {
		s.expectedRmFinalizers = sets.New[types.UID]()
	}
	for _, p := range pods {
		switch {
		case pod.IsActive(p):
			s.active = append(s.active, p)
			if pod.IsReady(p) {
				s.ready++
			}
		case pod.IsTerminating(p):
			s.terminating++
		}
	}
	newSucceeded, newFailed := s.newlyFinished()
	s.succeeded = job.Status.Succeeded + int32(len(newSucceeded)) + int32(s.uncountedSucceeded.Len())
	s.failed = job.Status.Failed + int32(s.uncountedFailed.Len())
	for _, p := range newFailed {
		if countsAsFailure(job, p) {
			s.failed++
		}
	}
	if job.Status.StartTime == nil && !isSuspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
	}
	s.newBackoff = nextBackoffRecord(oldBackoff, newSucceeded, newFailed)
	return s
}

// uncounted reports whether the pod's outcome is still to be counted: it holds the
// finalizer, is not already listed in uncountedTerminatedPods, and (Indexed) has a valid
// index.
func (s *syncState) uncounted(p *corev1.Pod, listed sets.Set[types.UID]) bool {
	if !hasTrackingFinalizer(p) || listed.Has(p.UID) || s.expectedRmFinalizers.Has(p.UID) {
		return false
	}
	if isIndexed(s.job) {
		if _, ok := validIndex(p, s.job); !ok {
			return false
		}
	}
	return true
}

// newlyFinished returns the pods that finished and are not counted anywhere yet.
func (s *syncState) newlyFinished() (succeeded, failed []*corev1.Pod) {
	for _, p := range s.pods {
		if p.Status.Phase == corev1.PodSucceeded && s.uncounted(p, s.uncountedSucceeded) {
			succeeded = append(succeeded, p)
		}
		if isPodFailed(p, s.job) && s.uncounted(p, s.uncountedFailed) {
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// evaluate decides whether the Job has failed or met its success policy, in upstream's
// order: a condition already written, a FailJob rule, the backoff limit, the deadline,
// failed indexes, then the success policy. Reaching completions is decided after pods are
// managed (isComplete). It returns how long until the active deadline, when one is ahead.
func (s *syncState) evaluate(now time.Time) (untilDeadline time.Duration) {
	job := s.job
	if c := conditionTrue(job.Status.Conditions, batchv1.JobSuccessCriteriaMet); c != nil {
		s.finished = c.DeepCopy()
	} else if c := conditionTrue(job.Status.Conditions, batchv1.JobFailureTarget); c != nil {
		s.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, c.Reason, c.Message, now)
	} else if msg, ok := failJobMessage(job, s.pods); ok {
		s.finished = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonPodFailurePolicy, msg, now)
	}
	if s.finished == nil {
		switch {
		case s.failed > ptr.Deref(job.Spec.BackoffLimit, defaultBackoffLimit) || pastBackoffLimitOnFailure(job, s.pods):
			s.finished = failureTarget(batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, now)
		case pastActiveDeadline(job, now):
			s.finished = failureTarget(batchv1.JobReasonDeadlineExceeded, msgDeadline, now)
		case job.Spec.ActiveDeadlineSeconds != nil && !isSuspended(job) && job.Status.StartTime != nil:
			untilDeadline = time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(job.Status.StartTime.Time)
		}
	}
	if !isIndexed(job) {
		return untilDeadline
	}
	completions := int(ptr.Deref(job.Spec.Completions, 0))
	s.prevSucceededIndexes = parseIntervals(job.Status.CompletedIndexes, completions)
	var newSucceeded []int
	for _, p := range s.pods {
		if ix, ok := validIndex(p, job); ok && p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) {
			newSucceeded = append(newSucceeded, ix)
		}
	}
	s.succeededIndexes = s.prevSucceededIndexes.with(newSucceeded...)
	s.succeeded = int32(s.succeededIndexes.total())
	if hasBackoffLimitPerIndex(job) {
		var prevFailed intervals
		if job.Status.FailedIndexes != nil {
			prevFailed = parseIntervals(*job.Status.FailedIndexes, completions)
		}
		var newFailed []int
		for _, p := range s.pods {
			if ix, ok := validIndex(p, job); ok && hasTrackingFinalizer(p) && isIndexFailed(job, p) {
				newFailed = append(newFailed, ix)
			}
		}
		failed := prevFailed.with(newFailed...)
		s.failedIndexes = &failed
		if s.finished == nil {
			switch {
			case job.Spec.MaxFailedIndexes != nil && failed.total() > int(*job.Spec.MaxFailedIndexes):
				s.finished = failureTarget(batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, now)
			case failed.total() > 0 && failed.total()+s.succeededIndexes.total() >= completions:
				s.finished = failureTarget(batchv1.JobReasonFailedIndexes, msgFailedIndexes, now)
			}
		}
		s.delayedDeletion = podsWithDelayedDeletion(s)
	}
	if s.finished == nil {
		if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, int32(completions), s.succeededIndexes); ok {
			s.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonSuccessPolicy, msg, now)
		}
	}
	return untilDeadline
}

func failureTarget(reason, message string, now time.Time) *batchv1.JobCondition {
	return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, reason, message, now)
}

// pastBackoffLimitOnFailure applies backoffLimit to container restarts when the pods
// restart in place (restartPolicy OnFailure) and so never fail.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, defaultBackoffLimit)
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

// pastActiveDeadline reports whether a running (not suspended) Job has been active for
// activeDeadlineSeconds.
func pastActiveDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	return now.Sub(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// desiredActive is how many pods should run: parallelism, but no more than the
// completions left; without completions, once a pod succeeded, no new ones.
func desiredActive(job *batchv1.Job, succeeded, active int32) int32 {
	parallelism := ptr.Deref(job.Spec.Parallelism, 1)
	if job.Spec.Completions == nil {
		if succeeded > 0 {
			return active
		}
		return parallelism
	}
	return max(0, min(*job.Spec.Completions-succeeded, parallelism))
}

// isComplete reports whether enough pods succeeded and none runs any more. Without
// completions, one success is enough.
func isComplete(job *batchv1.Job, succeeded, active int32) bool {
	if active != 0 {
		return false
	}
	if job.Spec.Completions == nil {
		return succeeded > 0
	}
	return succeeded >= *job.Spec.Completions
}

// applySuspension writes the Suspended condition for a Job whose pods were just managed,
// and reports the Event to record ("" when nothing changed). Suspending clears startTime
// with clearStartTime (upstream's MutableSchedulingDirectivesForSuspendedJobs, on by
// default); resuming restarts it, so that activeDeadlineSeconds counts only active time.
func applySuspension(job *batchv1.Job, now time.Time, clearStartTime bool) (reason, message string) {
	var changed bool
	if isSuspended(job) {
		job.Status.Conditions, changed = setCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, reasonJobSuspended, msgSuspended, now)
		if changed {
			if clearStartTime {
				job.Status.StartTime = nil
			}
			return "Suspended", msgSuspended
		}
		return "", ""
	}
	job.Status.Conditions, changed = setCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, reasonJobResumed, msgResumed, now)
	if changed {
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
		return "Resumed", msgResumed
	}
	return "", ""
}

// trackingPlan is what planTracking decided.
type trackingPlan struct {
	// removeFinalizer are the pods whose outcome is recorded in status and whose
	// finalizer can go once that status is written.
	removeFinalizer []*corev1.Pod
	// withFinalizer are the pods that still hold the finalizer.
	withFinalizer sets.Set[types.UID]
	// reachedMax says the uncounted lists are full: more pods wait for the next sync.
	reachedMax bool
	// policyActions counts the failed pods newly listed as uncounted by the action of the
	// pod failure policy rule they matched.
	policyActions map[string]int
}

// planTracking is the first half of counting: pods whose finalizer is gone move from
// uncountedTerminatedPods to the counters; finished pods still holding the finalizer are
// added to uncountedTerminatedPods (Indexed: succeeded ones to completedIndexes) and
// planned for finalizer removal; the interim condition is added and s.finished becomes
// the terminal condition it leads to. Only after this status is written may the
// finalizers go: a crash in between leaves the UIDs listed, so nothing is lost or
// counted twice.
func (s *syncState) planTracking(now time.Time) trackingPlan {
	job := s.job
	status := &job.Status
	indexed := isIndexed(job)
	if indexed {
		sort.SliceStable(s.pods, func(i, j int) bool { return completionIndex(s.pods[i]) < completionIndex(s.pods[j]) })
	}
	plan := trackingPlan{withFinalizer: sets.New[types.UID]()}
	for _, p := range s.pods {
		if hasTrackingFinalizer(p) && !s.expectedRmFinalizers.Has(p.UID) {
			plan.withFinalizer.Insert(p.UID)
		}
	}
	countRemovedFinalizers(status, plan.withFinalizer)

	failing := s.finished != nil && s.finished.Type != batchv1.JobSuccessCriteriaMet
	unc := status.UncountedTerminatedPods
	var newSucceededIndexes []int
	for _, p := range s.pods {
		if !plan.withFinalizer.Has(p.UID) {
			continue
		}
		failed := isPodFailed(p, job)
		if !s.canRemoveFinalizer(p, failed) {
			continue
		}
		plan.removeFinalizer = append(plan.removeFinalizer, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !s.uncountedFailed.Has(p.UID):
			if indexed {
				if ix, ok := validIndex(p, job); ok && !s.prevSucceededIndexes.has(ix) {
					newSucceededIndexes = append(newSucceededIndexes, ix)
				}
			} else if !s.uncountedSucceeded.Has(p.UID) {
				unc.Succeeded = append(unc.Succeeded, p.UID)
			}
		case failed || failing:
			// When the Job fails, every pod that did not succeed counts as failed.
			if s.uncountedFailed.Has(p.UID) {
				break
			}
			if _, ok := validIndex(p, job); indexed && !ok {
				break
			}
			v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
			if v.action != nil {
				if plan.policyActions == nil {
					plan.policyActions = map[string]int{}
				}
				plan.policyActions[string(*v.action)]++
			}
			if v.counts {
				unc.Failed = append(unc.Failed, p.UID)
			}
		}
		if len(newSucceededIndexes)+len(unc.Succeeded)+len(unc.Failed) >= MaxUncountedPods {
			plan.reachedMax = true
			break
		}
	}
	if indexed {
		s.succeededIndexes = s.succeededIndexes.with(newSucceededIndexes...)
		status.Succeeded = int32(s.succeededIndexes.total())
		status.CompletedIndexes = s.succeededIndexes.String()
		status.FailedIndexes = nil
		if s.failedIndexes != nil {
			status.FailedIndexes = ptr.To(s.failedIndexes.String())
		}
	}
	switch {
	case s.finished == nil:
	case s.finished.Type == batchv1.JobFailureTarget:
		status.Conditions = append(status.Conditions, *s.finished)
		s.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, s.finished.Reason, s.finished.Message, now)
	case s.finished.Type == batchv1.JobSuccessCriteriaMet:
		if conditionTrue(status.Conditions, batchv1.JobSuccessCriteriaMet) == nil {
			status.Conditions = append(status.Conditions, *s.finished)
		}
		s.finished = newCondition(batchv1.JobComplete, corev1.ConditionTrue, s.finished.Reason, s.finished.Message, now)
	}
	return plan
}

// canRemoveFinalizer: every pod's finalizer may go once the Job is deleted or finishing;
// otherwise only a finished pod's, except the failed pod an index's replacement has to
// inherit its failure count from (backoffLimitPerIndex).
func (s *syncState) canRemoveFinalizer(p *corev1.Pod, failed bool) bool {
	if s.job.DeletionTimestamp != nil || s.finished != nil || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if hasBackoffLimitPerIndex(s.job) {
		if ix := completionIndex(p); ix != unknownCompletionIndex {
			if d, ok := s.delayedDeletion[ix]; ok && d.UID == p.UID {
				return false
			}
		}
	}
	return true
}

// countRemovedFinalizers moves the uncounted pods that no longer hold the finalizer to
// the counters, and reports whether it moved any.
func countRemovedFinalizers(status *batchv1.JobStatus, withFinalizer sets.Set[types.UID]) bool {
	unc := status.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, u := range uids {
			if withFinalizer.Has(u) {
				out = append(out, u)
			}
		}
		return out
	}
	succeeded, failed := keep(unc.Succeeded), keep(unc.Failed)
	moved := len(succeeded) != len(unc.Succeeded) || len(failed) != len(unc.Failed)
	status.Succeeded += int32(len(unc.Succeeded) - len(succeeded))
	status.Failed += int32(len(unc.Failed) - len(failed))
	unc.Succeeded, unc.Failed = succeeded, failed
	return moved
}

// finish adds the terminal condition when the Job reached one and nothing is left to
// count or to terminate; it reports whether it did.
func (s *syncState) finish(now time.Time) bool {
	if s.finished == nil {
		return false
	}
	status := &s.job.Status
	if unc := status.UncountedTerminatedPods; unc != nil && len(unc.Succeeded)+len(unc.Failed) > 0 {
		return false
	}
	if s.terminating > 0 {
		return false
	}
	c := s.finished
	status.Conditions, _ = setCondition(status.Conditions, c.Type, c.Status, c.Reason, c.Message, now)
	if c.Type == batchv1.JobComplete {
		status.CompletionTime = ptr.To(findCondition(status.Conditions, batchv1.JobComplete).LastTransitionTime)
	}
	return true
}
