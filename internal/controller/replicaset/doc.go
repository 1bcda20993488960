// Package replicaset is upstream's replicaset-controller and, through the same code,
// replicationcontroller-controller: it keeps spec.replicas pods matching the selector,
// adopting and releasing pods, and reports their state in status.
//
// Where each decision lives:
//
//   - Kind (kind.go) is what differs between the two controllers: a ReplicationController
//     is viewed as the equivalent ReplicaSet, and its status written back, as upstream.
//   - Reconcile (reconciler.go) reads top to bottom: skip while the stale guard says the
//     cache has not shown this controller's own writes (ReplicaSets only, the
//     StaleControllerConsistencyReplicaSet gate); observe the pods, active and terminating,
//     adopting and releasing them (ownership.Claim); act only when the expectations are
//     satisfied (read before the pods are listed) and the owner is not being deleted; write
//     status; come back when a ready pod becomes available (nextAvailabilityCheck).
//   - manageReplicas (reconciler.go) turns the difference between spec.replicas and the
//     active pods into at most BurstReplicas creations (pod.CreateExpected, slow start) or
//     deletions, all at once. Which pods go is podsToDelete's (replicas.go): pod.DeleteFirst,
//     with a pod whose node runs more pods of the owner's controller (a Deployment's
//     ReplicaSets) going first.
//   - The status is calculateStatus's (replicas.go), a pure function of the pods, the
//     outcome of manageReplicas (the ReplicaFailure condition, FailedCreate or FailedDelete)
//     and the time; updateStatus writes it only when it changed.
//   - The pod events (podHandler, handler.go) map a pod to the owners to sync and lower the
//     expectations its creation or deletion meets.
package replicaset
