// Package invariants is the chaos suite's independent witness: it watches the API server
// itself (not through kcm) and checks, for a whole run, the promises kcm's workload
// controllers make, whatever faults hit kcm's own API traffic.
//
// The package has two halves. [Checker] is pure: it is fed object events in the order one
// observer sees them, with the observer's clock, and records a [Violation] for every broken
// rule; its table tests need no cluster. [Watcher] runs a Checker on a live cluster with
// client-go informers. [Converged] says what is not yet settled, for the suite to poll after
// each fault.
//
// # Live pods
//
// A pod is live while it exists, has no deletionTimestamp and its phase is neither Succeeded
// nor Failed: the pods the ReplicaSet, Deployment and Job controllers count as theirs.
// Terminating pods are not live, as those controllers do not count them either.
//
// # Why bounds are judged when a pod is created
//
// A controller breaks a bound by creating a pod it should not have; it cannot break one by
// lowering a spec. After the Deployment controller lowers an old ReplicaSet's replicas, that
// ReplicaSet has more live pods than replicas until the ReplicaSet controller deletes them:
// that lag is legitimate. So the count bounds (ReplicaSet replicas, Deployment surge, Job
// parallelism, DaemonSet one pod per node) are judged only when a new pod (a UID not seen
// before) appears, counting the live pods of its owner at that moment, itself included.
//
// Watches of different kinds are not ordered with one another: the ReplicaSet scale-up that
// caused a pod can reach this observer after the pod, and a scale-down can reach it before
// the pod its controller created from the older spec. So a creation is judged Grace (5 s by
// default) after it was seen, against the highest bound its owner had at any time within
// Grace before or after the creation. A violation therefore shows up Grace late, and a pod
// whose owner this observer never saw is not judged at all.
//
// # The rules
//
//   - [RuleReplicaSetReplicas]: when a pod of a ReplicaSet is created, the ReplicaSet's live
//     pods are at most the highest spec.replicas it had within Grace.
//   - [RuleDeploymentSurge]: when a pod of a Deployment's ReplicaSet is created, the live pods
//     of all that Deployment's ReplicaSets are at most spec.replicas + maxSurge, the highest
//     within Grace. maxSurge is resolved as upstream does: an integer, or a percentage of
//     spec.replicas rounded up; 0 for the Recreate strategy. The ReplicaSets are those whose
//     controller ownerReference names the Deployment. This counts pods, as the issue asks;
//     the Deployment controller itself only bounds its ReplicaSets' specs (next rule), so an
//     old pod whose deletion is slow (the ReplicaSet controller's DELETE delayed or retried
//     under a fault) while the new ReplicaSet's pods are created breaks this rule for
//     upstream too. Read it with RuleDeploymentScale: that one is exact.
//   - [RuleDeploymentScale]: when one of a Deployment's ReplicaSets is seen scaled up, the
//     spec.replicas of all its ReplicaSets sum to at most spec.replicas + maxSurge, the
//     highest within Grace. All ReplicaSets come through one watch, so the sum is one
//     moment's. The first list is not judged: after a Deployment is scaled down its
//     ReplicaSets legitimately hold more until scaled down.
//   - [RuleJobParallelism]: when a pod of a Job is created, the Job's live (active) pods are at
//     most the highest spec.parallelism it had within Grace.
//   - [RuleJobCompletions]: a Job's succeeded pods never outnumber spec.completions (the
//     highest seen, as an Indexed Job's completions may be changed). NonIndexed Jobs count
//     Succeeded pods by UID; Indexed Jobs count distinct values of the annotation
//     batch.kubernetes.io/job-completion-index among Succeeded pods. Jobs without
//     completions (work queues) are not judged.
//   - [RuleJobFinished]: no pod of a Job is created after the Job finished: a pod's
//     creationTimestamp is not later than the lastTransitionTime of the Job's Complete or
//     Failed condition (status True) plus one second, for both are API server times with one
//     second granularity.
//   - [RuleStatefulSetOrdinal]: never two live pods of a StatefulSet with one name, that is one
//     ordinal. Names are unique in the API, so this fires only if a predecessor's deletion
//     was never observed: it guards the observer as much as the controller.
//   - [RuleDaemonSetNode]: when a daemon pod is created, at most one live pod of its DaemonSet
//     is on its node, unless the DaemonSet's rollingUpdate.maxSurge is above zero. The node is
//     spec.nodeName or, before binding, the node the DaemonSet controller pins the pod to by
//     node affinity (a matchFields term on metadata.name).
//   - [RulePodLost]: a pod of a ReplicaSet that was not terminal is deleted (Deleted event or
//     deletionTimestamp set) while that ReplicaSet had never lowered its spec.replicas since
//     first seen and was not being deleted, nor its namespace, up to Grace after the deletion.
//     Deletions by other actors (the test deleting a pod, a node's eviction, the pod garbage
//     collector) count as violations too: the suite must not make them. A pod already
//     being deleted in the observer's first list is not judged.
//
// # What the Watcher misses
//
// Informers resume a cut watch from its last resourceVersion, losing nothing, and relist
// after a 410 Gone (etcd compaction), but a relist collapses events: a pod created and
// deleted between two lists is never seen, and a spec that changed twice shows only its
// last value. The Watcher is therefore a lower bound: every violation it reports happened,
// not every one that happened is reported. An object the Watcher sees added long after its
// creationTimestamp (after a relist, or behind a lagging watch) is not judged as a
// creation, since the counts it would be judged by are not those of its creation:
// Watcher.LateAdds says how many.
//
// A broken watch (the API server restarting, etcd away) holds back its kind's events until
// it resumes, and a pod created meanwhile would be judged without the scale-up that caused
// it. So a check that depends on a kind whose watch broke within its window waits until
// that kind's events flow again (its next event, or Options.MaxBlind), then is dropped:
// Watcher.Unjudged says how many, Watcher.WatchErrors how often the watches broke.
package invariants
