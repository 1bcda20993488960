package deployment

import (
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// byCreation orders ReplicaSets oldest first, by name when created at the same time.
type byCreation []*appsv1.ReplicaSet

func (o byCreation) Len() int      { return len(o) }
func (o byCreation) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byCreation) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// bySizeOlder orders ReplicaSets largest first, older first among equals.
type bySizeOlder []*appsv1.ReplicaSet

func (o bySizeOlder) Len() int      { return len(o) }
func (o bySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeOlder) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return byCreation(o).Less(i, j)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// bySizeNewer orders ReplicaSets largest first, newer first among equals.
type bySizeNewer []*appsv1.ReplicaSet

func (o bySizeNewer) Len() int      { return len(o) }
func (o bySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeNewer) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return byCreation(o).Less(j, i)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// byRevision orders ReplicaSets by revision, by creation when revisions are equal or unreadable.
type byRevision []*appsv1.ReplicaSet

func (o byRevision) Len() int      { return len(o) }
func (o byRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byRevision) Less(i, j int) bool {
	r1, err1 := revision(o[i])
	r2, err2 := revision(o[j])
	if err1 != nil || err2 != nil || r1 == r2 {
		return byCreation(o).Less(i, j)
	}
	return r1 < r2
}

// equalIgnoreHash compares two pod templates ignoring the pod-template-hash label.
// Without copies (upstream deep-copies both templates): it runs for every ReplicaSet of a
// Deployment several times per sync, and the copies were a visible share of the
// controller's allocations at scale (issue 24). The labels are compared apart; the rest
// through shallow copies without them.
func equalIgnoreHash(t1, t2 *corev1.PodTemplateSpec) bool {
	if !equalLabelsIgnoring(t1.Labels, t2.Labels, appsv1.DefaultDeploymentUniqueLabelKey) {
		return false
	}
	c1, c2 := *t1, *t2
	c1.Labels, c2.Labels = nil, nil
	return equality.Semantic.DeepEqual(&c1, &c2)
}

// equalLabelsIgnoring says whether a and b hold the same labels but for ignored.
func equalLabelsIgnoring(a, b map[string]string, ignored string) bool {
	n := len(a)
	if _, ok := a[ignored]; ok {
		n--
	}
	m := len(b)
	if _, ok := b[ignored]; ok {
		m--
	}
	if n != m {
		return false
	}
	for k, v := range a {
		if k == ignored {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// findNewReplicaSet is the oldest ReplicaSet with d's template, or nil. It sorts rss.
func findNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sort.Sort(byCreation(rss))
	for _, rs := range rss {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets is every ReplicaSet but the new one.
func findOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNewReplicaSet(d, rss)
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// filterActive keeps the ReplicaSets that want pods.
func filterActive(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// replicaCount sums spec.replicas.
func replicaCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += *rs.Spec.Replicas
		}
	}
	return n
}

// actualCount sums status.replicas.
func actualCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.Replicas
		}
	}
	return n
}

func readyCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.ReadyReplicas
		}
	}
	return n
}

func availableCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// terminatingCount sums status.terminatingReplicas; nil when a ReplicaSet its controller has
// synced does not report it (the sum would be wrong). ReplicaSets never synced count 0.
func terminatingCount(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

// findActiveOrLatest is the only active ReplicaSet, or the newest one when none is active;
// nil when several are active (they need proportional scaling). It sorts oldRSs newest first.
func findActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(byCreation(oldRSs)))
	active := filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// isSaturated says whether rs runs all of d's replicas, available, and was sized for them.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := desiredReplicas(rs)
	return ok && *rs.Spec.Replicas == *d.Spec.Replicas && desired == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// historyToDelete are the old ReplicaSets beyond revisionHistoryLimit, lowest revisions
// first, that may go: scaled to 0, without pods, observed by their controller, not being
// deleted. The new ReplicaSet is never among oldRSs.
func historyToDelete(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit == math.MaxInt32 {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := int32(len(alive)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}
	sort.Sort(byRevision(alive))
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}

// oldPodsRunning says whether old ReplicaSets still report pods, or any pod of an old
// ReplicaSet (podsByRS, by ReplicaSet UID) has not finished: a terminating pod still runs.
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podsByRS map[types.UID][]*corev1.Pod) bool {
	if actualCount(oldRSs) > 0 {
		return true
	}
	for uid, pods := range podsByRS {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
