package job

import (
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"
)

// Upstream's metric families of job-controller, with its names, labels, buckets and
// stability levels; job_controller_stale_sync_skips_total is staleGuard's (reconciler.go).
const subsystem = "job_controller"

var (
	// completion_mode (Indexed, NonIndexed), result (success, error), action (see the
	// action* constants).
	syncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "job_sync_duration_seconds",
		Help:           "The time it took to sync a job",
		StabilityLevel: metrics.STABLE,
		Buckets:        metrics.ExponentialBuckets(0.004, 2, 15),
	}, []string{"completion_mode", "result", "action"})
	syncsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "job_syncs_total",
		Help:           "The number of job syncs",
		StabilityLevel: metrics.STABLE,
	}, []string{"completion_mode", "result", "action"})
	// result (succeeded, failed), reason: the terminal condition's reason.
	jobsFinished = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "jobs_finished_total",
		Help:           "The number of finished jobs",
		StabilityLevel: metrics.STABLE,
	}, []string{"completion_mode", "result", "reason"})
	// controller_name: spec.managedBy.
	jobsByExternalController = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "jobs_by_external_controller_total",
		Help:           "The number of Jobs managed by an external controller",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller_name"})
	// Pods counted in status.succeeded / status.failed.
	podsFinished = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "job_pods_finished_total",
		Help:           "The number of finished Pods that are fully tracked",
		StabilityLevel: metrics.STABLE,
	}, []string{"completion_mode", "result"})
	// action: FailJob, Ignore, Count (and FailIndex).
	podFailuresByPolicy = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "pod_failures_handled_by_failure_policy_total",
		Help: `The number of failed Pods handled by failure policy with
			respect to the failure policy action applied based on the matched
			rule. Possible values of the action label correspond to the
			possible values for the failure policy rule action, which are:
			"FailJob", "Ignore" and "Count".`,
		StabilityLevel: metrics.BETA,
	}, []string{"action"})
	// event: add, delete.
	terminatedPodsWithFinalizer = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "terminated_pods_tracking_finalizer_total",
		Help: `The number of terminated pods (phase=Failed|Succeeded)
that have the finalizer batch.kubernetes.io/job-tracking
The event label can be "add" or "delete".`,
		StabilityLevel: metrics.BETA,
	}, []string{"event"})
	// status (succeeded, failed), backoffLimit (perIndex, global).
	finishedIndexes = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "job_finished_indexes_total",
		Help: `The number of finished indexes. Possible values for the
			status label are: "succeeded", "failed". Possible values for the
			backoffLimit label are: "perIndex" and "global"`,
	}, []string{"status", "backoffLimit"})
	// reason (new, recreate_terminating_or_failed, recreate_failed), status (succeeded,
	// failed).
	podsCreation = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "job_pods_creation_total",
		Help: `The number of Pods created by the Job controller labelled with a reason for the Pod creation.
This metric also distinguishes between Pods created using different PodReplacementPolicy settings.
Possible values of the "reason" label are:
"new", "recreate_terminating_or_failed", "recreate_failed".
Possible values of the "status" label are:
"succeeded", "failed".`,
	}, []string{"reason", "status"})

	registerOnce sync.Once
)

// The action label of a sync: what it did to the Job's pods.
const (
	// actionReconciling: the sync waited for earlier creations or deletions to show, or
	// did not manage pods (the Job finishing or being deleted).
	actionReconciling = "reconciling"
	// actionTracking: the pods were as wanted.
	actionTracking = "tracking"
	// actionPodsCreated: the sync created pods, or would have but for the failure backoff.
	actionPodsCreated = "pods_created"
	// actionPodsDeleted: the sync deleted pods (too many, or the Job suspended).
	actionPodsDeleted = "pods_deleted"
)

// registerMetrics adds the families to the legacy registry once per process, as
// upstream's constructor does.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(syncDuration)
		legacyregistry.MustRegister(syncsTotal)
		legacyregistry.MustRegister(jobsFinished)
		legacyregistry.MustRegister(podsFinished)
		legacyregistry.MustRegister(podFailuresByPolicy)
		legacyregistry.MustRegister(terminatedPodsWithFinalizer)
		legacyregistry.MustRegister(finishedIndexes)
		legacyregistry.MustRegister(podsCreation)
		legacyregistry.MustRegister(jobsByExternalController)
		staleGuard.Skips()
	})
}

func completionModeLabel(job *batchv1.Job) string {
	if isIndexed(job) {
		return string(batchv1.IndexedCompletion)
	}
	return string(batchv1.NonIndexedCompletion)
}

// recordSync observes one sync of a Job that was neither finished nor managed elsewhere.
func recordSync(job *batchv1.Job, action string, took time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	mode := completionModeLabel(job)
	syncDuration.WithLabelValues(mode, result, action).Observe(took.Seconds())
	syncsTotal.WithLabelValues(mode, result, action).Inc()
}

// recordJobFinished counts a Job whose terminal condition was just written.
func recordJobFinished(job *batchv1.Job, c *batchv1.JobCondition) {
	switch c.Type {
	case batchv1.JobComplete:
		jobsFinished.WithLabelValues(completionModeLabel(job), "succeeded", c.Reason).Inc()
	case batchv1.JobFailed:
		jobsFinished.WithLabelValues(completionModeLabel(job), "failed", c.Reason).Inc()
	}
}

// recordPodsFinished counts the pods (Indexed: the indexes) a status write moved into the
// counters, from the status before it (old) to the one stored (job).
func recordPodsFinished(job *batchv1.Job, old *batchv1.JobStatus) {
	mode := completionModeLabel(job)
	succeeded := int(job.Status.Succeeded) - int(old.Succeeded)
	if isIndexed(job) {
		// A completed index beyond lowered completions no longer counts: compare the
		// indexes within range, not the counters.
		completions := int(ptr.Deref(job.Spec.Completions, 0))
		succeeded = 0
		if job.Status.CompletedIndexes != old.CompletedIndexes {
			succeeded = indexesWithin(job.Status.CompletedIndexes, completions) - indexesWithin(old.CompletedIndexes, completions)
		}
		limit := "global"
		if hasBackoffLimitPerIndex(job) {
			limit = "perIndex"
		}
		finishedIndexes.WithLabelValues("succeeded", limit).Add(float64(succeeded))
		if hasBackoffLimitPerIndex(job) && !equalPtr(job.Status.FailedIndexes, old.FailedIndexes) {
			failed := indexesWithin(ptr.Deref(job.Status.FailedIndexes, ""), completions) - indexesWithin(ptr.Deref(old.FailedIndexes, ""), completions)
			if failed > 0 {
				finishedIndexes.WithLabelValues("failed", limit).Add(float64(failed))
			}
		}
	}
	podsFinished.WithLabelValues(mode, "succeeded").Add(float64(succeeded))
	podsFinished.WithLabelValues(mode, "failed").Add(float64(job.Status.Failed - old.Failed))
}

func equalPtr(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// recordPodCreations counts the pods one sync created and failed to create, labelled with
// why they were created: the first ones, or replacements under the pod replacement policy.
func recordPodCreations(job *batchv1.Job, failedPods int32, terminating int32, created, failed int) {
	reason := creationReason(job, failedPods, terminating)
	if created > 0 {
		podsCreation.WithLabelValues(reason, "succeeded").Add(float64(created))
	}
	if failed > 0 {
		podsCreation.WithLabelValues(reason, "failed").Add(float64(failed))
	}
}

// indexesWithin is how many indexes the compressed form lists below completions.
func indexesWithin(s string, completions int) int {
	return parseIntervals(s, completions).total()
}

// creationReason is the reason label of a sync's pod creations: "new" while no pod of the
// Job failed or terminates; else a replacement, waiting for failed pods only under the
// Failed replacement policy.
func creationReason(job *batchv1.Job, failedPods, terminating int32) string {
	switch {
	case ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed && failedPods > 0:
		return "recreate_failed"
	case failedPods > 0 || terminating > 0:
		return "recreate_terminating_or_failed"
	}
	return "new"
}
