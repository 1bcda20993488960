// Package cronjob is upstream's cronjob-controller: it starts a Job from a CronJob's
// jobTemplate at each schedule time, applies its concurrency policy, starting deadline and
// history limits, and reports the running Jobs and the last run times in status.
//
// Where each decision lives:
//
//   - Reconcile (reconciler.go) reads top to bottom: observe the CronJob and the Jobs it
//     controls (jobsOf, from the cache; the CronJob again from the API server when an
//     unfinished Job is missing from status.active, most often its own status write not yet
//     in the cache), account, decide, act, and write status once.
//   - What the Jobs say, in decide.go: accountJobs takes finished Jobs out of status.active
//     (SawCompletedJob), moves lastSuccessfulTime, and returns the unexpected and the missing
//     Jobs; historyToDelete picks the finished Jobs beyond the two history limits, oldest
//     start first.
//   - What the schedule says, in decide.go: decide is a pure function of the CronJob and the
//     time that returns a plan (start the Job of a schedule time or not, replace the active
//     Jobs, when to look again, a terminal error for a bad time zone or schedule, and the
//     Events) from suspend, timeZone, startingDeadlineSeconds and concurrencyPolicy. The
//     schedule times themselves (mostRecentScheduleTime, nextScheduleTime, requeueAfter) and
//     a run's Job name are schedule.go's; the Job to create is jobFromTemplate's.
//   - Acting, in reconciler.go: deleteHistory; confirmMissing, which asks the API server about
//     an active Job the cache does not show before it leaves status.active (MissingJob);
//     start, which deletes the active Jobs for Replace, creates the Job and lists it in
//     status.active; patchStatus, optimistically locked, since status.active and
//     lastScheduleTime cannot be recomputed from the Jobs.
//   - A changed schedule or time zone (cronJobHandler, handler.go) queues the CronJob for its
//     next time under the new schedule rather than at once, as upstream.
package cronjob
