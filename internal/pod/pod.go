// Package pod holds the facts about pods that several controllers share, with upstream's
// definitions: ready, available, active, terminating, and which pods to delete first.
package pod

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionCostAnnotation ranks pods for deletion by their owner: lower cost goes first.
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// Key is the pod's "namespace/name", the key controllers' expectations track deletions by
// and their logs name pods with (client-go's MetaNamespaceKeyFunc for a pod).
func Key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// ReadyCondition returns the pod's Ready condition, or nil.
func ReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsAvailable reports whether the pod has been ready for at least minReadySeconds at now.
func IsAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := ReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	minReady := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(minReady).After(now)
}

// NextAvailabilityCheck returns how long after now a ready pod becomes available, or nil when
// it is already available, not ready, or minReadySeconds is 0.
func NextAvailabilityCheck(p *corev1.Pod, minReadySeconds int32, now time.Time) *time.Duration {
	c := ReadyCondition(p)
	if minReadySeconds <= 0 || c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return nil
	}
	wait := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if wait <= 0 {
		return nil
	}
	return &wait
}

// IsActive reports whether the pod counts towards its owner's replicas: neither finished
// nor being deleted.
func IsActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// IsTerminal reports whether the pod has finished.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsTerminating reports whether the pod is being deleted but has not finished yet.
func IsTerminating(p *corev1.Pod) bool {
	return !IsTerminal(p) && p.DeletionTimestamp != nil
}

// DeletionCost is the pod's deletion-cost annotation, 0 when absent or malformed.
func DeletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[DeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// maxRestarts returns the highest restart count of the regular containers and of the
// sidecars (init containers that always restart).
func maxRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if sidecars[c.Name] {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// DeleteFirst reports whether pod a should be deleted before pod b when an owner scales
// down, by upstream's ActivePodsWithRanks (ReplicaSets): unassigned before assigned;
// pending before unknown before running; not ready before ready; lower deletion cost first
// (withCost: upstream's PodDeletionCost gate); more co-located siblings (rank) first; more
// recently ready first; more restarts first; newer first. Times are compared in logarithmic
// buckets relative to now, so that pods of similar age are chosen among at random (by UID)
// rather than always the very newest.
func DeleteFirst(a, b *corev1.Pod, withCost bool, rankA, rankB int, now time.Time) bool {
	return deleteFirst(a, b, withCost, rankA, rankB, now)
}

// ActiveFirst is upstream's ActivePods order (Jobs): DeleteFirst without the deletion cost
// and the rank, with times compared exactly.
func ActiveFirst(a, b *corev1.Pod) bool {
	return deleteFirst(a, b, false, 0, 0, time.Time{})
}

// deleteFirst is both orders; withCost honours the pod-deletion-cost annotation, and a zero
// now compares times exactly.
func deleteFirst(a, b *corev1.Pod, withCost bool, rankA, rankB int, now time.Time) bool {
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseOrder[a.Status.Phase] != phaseOrder[b.Status.Phase] {
		return phaseOrder[a.Status.Phase] < phaseOrder[b.Status.Phase]
	}
	readyA, readyB := IsReady(a), IsReady(b)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := DeletionCost(a), DeletionCost(b); withCost && ca != cb {
		return ca < cb
	}
	if rankA != rankB {
		return rankA > rankB
	}
	if readyA && readyB {
		ta, tb := ReadyCondition(a).LastTransitionTime, ReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return newerFirst(a, b, ta, tb, now)
		}
	}
	regularA, sidecarA := maxRestarts(a)
	regularB, sidecarB := maxRestarts(b)
	if regularA != regularB {
		return regularA > regularB
	}
	if sidecarA != sidecarB {
		return sidecarA > sidecarB
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return newerFirst(a, b, a.CreationTimestamp, b.CreationTimestamp, now)
	}
	return false
}

// newerFirst orders by time, newest first, in logarithmic buckets of age; a zero time
// counts as newest.
func newerFirst(a, b *corev1.Pod, ta, tb metav1.Time, now time.Time) bool {
	if now.IsZero() || ta.IsZero() || tb.IsZero() {
		if ta.IsZero() || tb.IsZero() {
			return ta.IsZero()
		}
		return ta.After(tb.Time)
	}
	if d := logBucket(now.Sub(ta.Time)) - logBucket(now.Sub(tb.Time)); d != 0 {
		return d < 0
	}
	return a.UID < b.UID
}

func logBucket(age time.Duration) int64 {
	if age <= 0 {
		return -1
	}
	return int64(math.Log2(float64(age)))
}
