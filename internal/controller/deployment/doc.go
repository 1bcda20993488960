// Package deployment is upstream's deployment-controller: one ReplicaSet per pod template,
// rolled out by the RollingUpdate or Recreate strategy, scaled proportionally, paused,
// rolled back, cleaned up to revisionHistoryLimit, and reported in status with the
// Available and Progressing conditions.
//
// The flow follows upstream's syncDeployment. A sync works on a copy of the Deployment whose
// status and annotations it changes along the way; they are written once, at the end, through
// the status subresource (which also takes annotations, as upstream relies on). Decisions
// are pure functions in the small files; sync.go and strategy.go apply them.
//
// Where each decision lives:
//
//   - Which path a sync takes is sync's (reconciler.go), in upstream's order: a selector
//     that selects everything, deletion (status only), pause (pausedCondition, progress.go,
//     then scaling only), a rollback request, a scaling event (isScalingEvent, sync.go),
//     then the strategy. Reconcile writes the status and annotations the sync changed, and
//     drops a sync that met a conflict: the cache was behind.
//   - Which ReplicaSet is new and which are old is replicasets.go's (findNewReplicaSet,
//     findOldReplicaSets, with the pod-template-hash ignored); the new one's name, labels
//     and selector are hash.go's; revisions and the annotations carried from the Deployment
//     to its ReplicaSets (and back on rollback) are revision.go's.
//   - How far a rollout may go is rollout.go's: maxSurge and maxUnavailable as numbers of
//     pods (resolveFenceposts), how far the new ReplicaSet may grow (newRSNewReplicas), how
//     many old pods may go (maxScaledDown) and which old ReplicaSets shrink first
//     (unhealthyCleanup, oldScaleDown). strategy.go applies them (rolloutRolling,
//     rolloutRecreate, which waits for the old pods to be gone: oldPodsRunning).
//   - How a resize is shared among the ReplicaSets during a rollout or while paused is
//     proportion.go's (proportionalSizes); sync.go's scale applies it.
//   - Status is progress.go's: calculateStatus (counts and Available), rolloutStatus (the
//     Progressing condition: complete, progressing or past its deadline) and
//     progressCheckAfter, when to look again for the progress deadline.
//   - Which old ReplicaSets to delete past revisionHistoryLimit is historyToDelete's
//     (replicasets.go); sync.go's cleanup deletes them.
package deployment
