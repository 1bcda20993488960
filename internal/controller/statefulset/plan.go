package statefulset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcm/kcm/internal/pod"
)

// stepKind is one thing the reconciler does to a pod.
type stepKind int

const (
	// stepCreate creates the claims and the pod of an ordinal.
	stepCreate stepKind = iota
	// stepDelete deletes a pod (failed, scaled down, or of an old revision).
	stepDelete
	// stepRelabel restores a pod's identity labels.
	stepRelabel
	// stepClaims creates a pending pod's missing claims and fixes its claims' ownerReferences
	// to match the retention policy.
	stepClaims
	// stepReportUnavailable reports how many pods the rolling update counted unavailable
	// (upstream's statefulset_unavailable_replicas): it runs, as upstream reports it, only
	// when the stages before succeeded.
	stepReportUnavailable
)

// deleteReason says why a pod is deleted.
type deleteReason string

const (
	reasonFailed    deleteReason = "failed"
	reasonScaleDown deleteReason = "scale down"
	reasonUpdate    deleteReason = "update"
)

// step is one action on one ordinal.
type step struct {
	kind    stepKind
	ordinal int
	// pod is the existing pod (nil for stepCreate).
	pod *corev1.Pod
	// revision is the revision name a created pod gets.
	revision string
	// createClaims asks stepClaims to create missing claims.
	createClaims bool
	reason       deleteReason
	// unavailable is what stepReportUnavailable reports.
	unavailable int
}

// planInput is what the decisions are made from.
type planInput struct {
	set *appsv1.StatefulSet
	// currentRevision and updateRevision are revision names.
	currentRevision, updateRevision string
	// pods are the set's pods (claimed, named <set>-<ordinal>).
	pods []*corev1.Pod
	now  time.Time
	// oneAtATime is upstream without MaxUnavailableStatefulSet: a RollingUpdate ignores
	// maxUnavailable and replaces one pod at a time.
	oneAtATime bool
}

// plan decides what one sync does, as upstream's updateStatefulSet: stages run in order,
// each only when the one before succeeded. In OrderedReady mode steps run one after another
// and the plan already stops where upstream waits (a pod not Running and Ready and
// available, a terminating pod, a creation or a deletion); in Parallel mode a stage's steps
// run at once.
//
//  1. each ordinal in range, ascending: create it when missing, delete it when failed,
//     create a pending pod's missing claims, repair its identity and claims;
//  2. the ordinals out of range ("condemned"), descending: fix their claims' owners;
//  3. the condemned, descending: delete them (OrderedReady: one at a time, only when every
//     other pod is available, the first unavailable pod excepted);
//  4. RollingUpdate: delete pods at ordinals ≥ partition not at the update revision, highest
//     first, keeping at most maxUnavailable pods unavailable.
func plan(in planInput) [][]step {
	set := in.set
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	minReady := set.Spec.MinReadySeconds
	available := func(p *corev1.Pod) bool { return pod.IsAvailable(p, minReady, in.now) }
	unavailable := func(p *corev1.Pod) bool { return !available(p) || p.DeletionTimestamp != nil }
	runningReady := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && pod.IsReady(p) }

	start, n := startOrdinal(set), replicasOf(set)
	replicas := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range in.pods {
		o := ordinalOf(p)
		switch {
		case inRange(set, o):
			replicas[o-start] = p
		case o >= 0:
			condemned = append(condemned, p)
		}
	}
	sort.SliceStable(condemned, func(i, j int) bool { return ordinalOf(condemned[i]) > ordinalOf(condemned[j]) })

	// The first unavailable pod (a missing one counts) may be deleted on scale-down even in
	// OrderedReady mode.
	var firstUnavailable *corev1.Pod
	firstFound := false
	for _, p := range replicas {
		if p == nil || unavailable(p) {
			firstUnavailable, firstFound = p, true
			break
		}
	}
	if !firstFound {
		for i := len(condemned) - 1; i >= 0; i-- {
			if unavailable(condemned[i]) {
				firstUnavailable = condemned[i]
				break
			}
		}
	}

	var stages [][]step
	// 1. Ordinals in range.
	var s1 []step
	for i, p := range replicas {
		o := start + i
		if p == nil {
			s1 = append(s1, step{kind: stepCreate, ordinal: o, revision: newPodRevision(set, o, in.currentRevision, in.updateRevision)})
			if monotonic {
				return append(stages, s1)
			}
			continue
		}
		if pod.IsTerminal(p) {
			if p.DeletionTimestamp == nil {
				s1 = append(s1, step{kind: stepDelete, ordinal: o, pod: p, reason: reasonFailed})
			}
			if monotonic {
				return append(stages, s1)
			}
			continue
		}
		pending := p.Status.Phase == corev1.PodPending
		if pending {
			s1 = append(s1, step{kind: stepClaims, ordinal: o, pod: p, createClaims: true})
		}
		if monotonic && (p.DeletionTimestamp != nil || !runningReady(p) || !available(p)) {
			return append(stages, s1)
		}
		if !identityMatches(set, p) {
			s1 = append(s1, step{kind: stepRelabel, ordinal: o, pod: p})
		}
		if !pending {
			s1 = append(s1, step{kind: stepClaims, ordinal: o, pod: p})
		}
	}
	stages = append(stages, s1)

	// 2. Claims of the condemned.
	var s2 []step
	for _, p := range condemned {
		s2 = append(s2, step{kind: stepClaims, ordinal: ordinalOf(p), pod: p})
	}
	stages = append(stages, s2)

	// 3. Scale down.
	var s3 []step
	for _, p := range condemned {
		if p.DeletionTimestamp != nil {
			if monotonic {
				return append(stages, s3)
			}
			continue
		}
		if monotonic && p != firstUnavailable && (!runningReady(p) || !available(p)) {
			return append(stages, s3)
		}
		s3 = append(s3, step{kind: stepDelete, ordinal: ordinalOf(p), pod: p, reason: reasonScaleDown})
		if monotonic {
			return append(stages, s3)
		}
	}
	stages = append(stages, s3)

	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return stages
	}
	if in.oneAtATime {
		return append(stages, rollingUpdateOneAtATime(set, replicas, in.updateRevision, unavailable))
	}
	return append(stages, rollingUpdate(set, replicas, in.updateRevision, unavailable, available))
}

// rollingUpdateOneAtATime is upstream's RollingUpdate without MaxUnavailableStatefulSet,
// whatever the pod management policy: from the highest ordinal down to the partition, the
// first pod not at the update revision and not terminating is deleted, unless a pod above it
// is not yet available (or missing), which is waited for.
func rollingUpdateOneAtATime(set *appsv1.StatefulSet, replicas []*corev1.Pod, updateRevision string,
	unavailable func(*corev1.Pod) bool) []step {
	updateMin := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		updateMin = int(*ru.Partition)
	}
	for i := len(replicas) - 1; i >= updateMin; i-- {
		p := replicas[i]
		if p == nil {
			return nil
		}
		if revisionOf(p) != updateRevision && p.DeletionTimestamp == nil {
			return []step{{kind: stepDelete, ordinal: startOrdinal(set) + i, pod: p, reason: reasonUpdate}}
		}
		if unavailable(p) {
			return nil
		}
	}
	return nil
}

// rollingUpdate picks the pods a RollingUpdate deletes now (upstream with
// MaxUnavailableStatefulSet, on by default in 1.37).
func rollingUpdate(set *appsv1.StatefulSet, replicas []*corev1.Pod, updateRevision string,
	unavailable, available func(*corev1.Pod) bool) []step {
	start := startOrdinal(set)
	updateMin := 0
	maxUnavailable := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			updateMin = int(*ru.Partition)
		}
		maxUnavailable = maxUnavailableOf(ru.MaxUnavailable, len(replicas))
	}
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	old := func(p *corev1.Pod) bool { return p != nil && revisionOf(p) != updateRevision }

	unavailablePods, unavailableOld := 0, 0
	for _, p := range replicas {
		if p == nil || unavailable(p) {
			unavailablePods++
			if parallel && old(p) && p.DeletionTimestamp == nil {
				unavailableOld++
			}
		}
	}
	out := []step{{kind: stepReportUnavailable, unavailable: unavailablePods}}
	if unavailablePods >= maxUnavailable && unavailableOld == 0 {
		return out
	}
	del := func(i int) {
		out = append(out, step{kind: stepDelete, ordinal: start + i, pod: replicas[i], reason: reasonUpdate})
	}
	if parallel {
		// Old pods already unavailable first, then available ones within the budget.
		for i := len(replicas) - 1; i >= updateMin; i-- {
			if p := replicas[i]; old(p) && !available(p) && p.DeletionTimestamp == nil {
				del(i)
			}
		}
		budget := maxUnavailable - unavailablePods
		for i := len(replicas) - 1; i >= updateMin && budget > 0; i-- {
			if p := replicas[i]; old(p) && !unavailable(p) {
				del(i)
				budget--
			}
		}
		return out
	}
	budget := maxUnavailable - unavailablePods
	for i := len(replicas) - 1; i >= updateMin && budget > 0; i-- {
		if p := replicas[i]; old(p) && p.DeletionTimestamp == nil {
			del(i)
			budget--
		}
	}
	return out
}

// maxUnavailableOf resolves rollingUpdate.maxUnavailable against replicas, rounding down,
// at least 1.
func maxUnavailableOf(v *intstr.IntOrString, replicas int) int {
	if v == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(v, intstr.FromInt32(1)), replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func revisionOf(p *corev1.Pod) string {
	return p.Labels[appsv1.ControllerRevisionHashLabelKey]
}

// newPodRevision is the revision a pod created at ordinal gets, as upstream's
// newVersionedStatefulSetPod: the current revision below the partition, the update
// revision from it on (and always with OnDelete).
func newPodRevision(set *appsv1.StatefulSet, ordinal int, current, update string) string {
	s := set.Spec.UpdateStrategy
	start := startOrdinal(set)
	if s.Type == appsv1.RollingUpdateStatefulSetStrategyType && s.RollingUpdate == nil && ordinal < start+int(set.Status.CurrentReplicas) {
		return current
	}
	if s.RollingUpdate != nil && s.RollingUpdate.Partition != nil && ordinal < start+int(*s.RollingUpdate.Partition) {
		return current
	}
	return update
}

// computeStatus counts the set's pods as upstream's status does: replicas are created pods,
// ready ones Running and Ready, available ones also ready for minReadySeconds; current and
// updated pods by revision, terminating ones excluded. Revisions, observedGeneration and
// collisionCount are the caller's.
func computeStatus(set *appsv1.StatefulSet, pods []*corev1.Pod, current, update string, now time.Time) appsv1.StatefulSetStatus {
	var st appsv1.StatefulSetStatus
	for _, p := range pods {
		if ordinalOf(p) < 0 || p.Status.Phase == "" {
			continue
		}
		st.Replicas++
		if p.Status.Phase == corev1.PodRunning && pod.IsReady(p) {
			st.ReadyReplicas++
			if pod.IsAvailable(p, set.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
		if p.DeletionTimestamp == nil {
			if revisionOf(p) == current {
				st.CurrentReplicas++
			}
			if revisionOf(p) == update {
				st.UpdatedReplicas++
			}
		}
	}
	return st
}

// completeUpdate makes the update revision current once every replica is updated and ready.
func completeUpdate(set *appsv1.StatefulSet, st *appsv1.StatefulSetStatus) {
	n := int32(replicasOf(set))
	if st.UpdatedReplicas == n && st.ReadyReplicas == n && st.Replicas == n {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
}

// truncatable returns the revisions to delete to keep revisionHistoryLimit revisions that
// are neither current, nor the update revision, nor a pod's; revs are sorted oldest first.
func truncatable(set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, pods []*corev1.Pod, current, update string) []*appsv1.ControllerRevision {
	live := map[string]bool{current: true, update: true}
	for _, p := range pods {
		live[revisionOf(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	return old[:len(old)-limit]
}
