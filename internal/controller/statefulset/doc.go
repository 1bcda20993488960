// Package statefulset is upstream's statefulset-controller: it keeps one pod per ordinal,
// <set>-<ordinal>, with stable identity and claims from volumeClaimTemplates, created and
// deleted in order (OrderedReady) or at once (Parallel), rolled to new revisions of the
// template recorded as ControllerRevisions, and reports them in status.
//
// Where each decision lives:
//
//   - Reconcile (reconciler.go) reads top to bottom: skip while the stale guard says the
//     cache has not shown this controller's own writes (StaleControllerConsistencyStatefulSet);
//     observe the revisions and the pods, adopting orphans; find the revisions; count status;
//     act on the plan unless the set is being deleted; write status once; then delete the
//     revisions past revisionHistoryLimit and come back when a ready pod becomes available.
//   - Which revisions are current and update is syncRevisions's (reconciler.go): it reuses an
//     equal older revision (a rollback) or the newest when it records the same template once
//     defaulted (matchesLatest, revision.go, with defaults.go's copy of the API server's pod
//     template defaults: the StatefulSetSemanticRevisionComparison gate).
//   - What a sync does to the pods is plan's (plan.go), a pure function of the set, the two
//     revisions, the pods and the time: stages of steps (create, delete, relabel, fix claims,
//     report unavailable) that stop where upstream's updateStatefulSet waits, with the
//     rolling update's choice of pods (rollingUpdate, rollingUpdateOneAtATime without the
//     MaxUnavailableStatefulSet gate) and which revision a new pod gets (newPodRevision).
//   - Who a pod is and what it has is identity.go's: ordinals, names, membership, the pod
//     and claims an ordinal gets, and the claims' ownerReferences under the retention policy.
//   - Acting is act's (reconciler.go): each stage in order, one step at a time for
//     OrderedReady, in slow-start batches for Parallel; createPod, deletePod, relabel,
//     createClaims and syncClaims are the writes, with upstream's Events.
//   - Status is computeStatus's and completeUpdate's (plan.go); which revisions to delete is
//     truncatable's (plan.go).
package statefulset
