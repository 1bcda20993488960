// Package job is upstream's job-controller: it runs a Job's pods to completion, counts every
// finished pod exactly once through the batch.kubernetes.io/job-tracking finalizer and
// status.uncountedTerminatedPods, and reports the outcome in conditions (interim
// SuccessCriteriaMet/FailureTarget first, terminal Complete/Failed once no pod runs).
//
// Where each decision lives:
//
//   - Reconcile (reconciler.go) reads top to bottom: skip while the stale guard says the
//     cache has not shown this controller's own writes (StaleControllerConsistencyJob), and
//     skip finished Jobs and Jobs managed by another controller; observe the pods (adopting
//     and releasing them); compare (newSyncState, evaluate); act (delete every active pod of
//     a Job that failed or met its success policy, else manageJob); write status
//     (trackStatus).
//   - Whether the Job failed or succeeded is syncState's (sync.go): evaluate applies, in
//     upstream's order, a condition already written, the pod failure policy's FailJob rules
//     (policy.go), the backoff limit, the active deadline, failed indexes and the success
//     policy (matchSuccessPolicy, policy.go); reaching completions is isComplete's, decided
//     after the pods are managed. desiredActive is how many pods should run;
//     applySuspension starts or stops the Job's clock on suspend and resume.
//   - Which pods to create or delete is manageJob's (reconciler.go), from the counts and,
//     for Indexed Jobs, from indexed.go (firstPendingIndexes, activePodsForRemoval,
//     podsWithDelayedDeletion, podForJob). When a failed pod may be replaced is the pod
//     failure backoff's (backoff.go), which manageJob applies per Job and creatableIndexes
//     per index (backoffLimitPerIndex). Creations go through pod.CreateExpected with the
//     controller's expectations.
//   - Counting is planTracking's (sync.go): finished pods go to uncountedTerminatedPods (and
//     the interim condition is added) before their finalizers are removed, then to the
//     counters; finish adds the terminal condition once nothing is left to count or to
//     terminate. trackStatus (reconciler.go) writes each half, removing the finalizers in
//     between; the finalizer removals it still expects to see are tracking.go's.
//   - Pods no running Job tracks (orphans, pods of a finished or deleted Job) lose their
//     finalizer in a companion controller, orphanReconciler (orphan.go).
package job
