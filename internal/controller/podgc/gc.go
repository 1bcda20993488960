package podgc

import (
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// evictedReason is the status reason the kubelet gives the pods it evicts
// (pkg/kubelet/eviction.Reason).
const evictedReason = "Evicted"

// isTerminated is upstream's definition for the threshold: any phase but Pending, Running
// and Unknown, so that an unexpected phase counts too.
func isTerminated(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodUnknown:
		return false
	}
	return true
}

func isEvicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == evictedReason
}

// deleteBefore orders terminated pods for collection as upstream does: evicted pods first (so
// that the terminated pods of controllers, e.g. Jobs, are kept longest), then oldest by
// creation timestamp, then by name.
func deleteBefore(a, b *corev1.Pod) int {
	if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		if a.CreationTimestamp.Before(&b.CreationTimestamp) {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// terminatedToDelete returns the terminated pods above threshold, in the order they go:
// none when threshold is 0 or less (the collection of terminated pods is off).
func terminatedToDelete(pods []*corev1.Pod, threshold int) []*corev1.Pod {
	if threshold <= 0 {
		return nil
	}
	var terminated []*corev1.Pod
	for _, p := range pods {
		if isTerminated(p) {
			terminated = append(terminated, p)
		}
	}
	n := len(terminated) - threshold
	if n <= 0 {
		return nil
	}
	slices.SortFunc(terminated, deleteBefore)
	return terminated[:n]
}

// isOutOfService reports whether the pods terminating on node may be force-deleted: the node
// is not Ready and carries the node.kubernetes.io/out-of-service taint (any effect, as
// upstream checks the key only).
func isOutOfService(node *corev1.Node) bool {
	if nodeReady(node) {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			return true
		}
	}
	return false
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// quarantine holds the names of nodes that pods are bound to but the cache does not know,
// each with the time its quarantine ends: upstream waits that long for a node to show up
// in the cache before asking the API server whether it is really gone.
type quarantine map[string]time.Time

// add starts the quarantine of node unless it is already running.
func (q quarantine) add(node string, until time.Time) {
	if _, ok := q[node]; !ok {
		q[node] = until
	}
}

// popDue removes and returns, sorted, the nodes whose quarantine ended at now.
func (q quarantine) popDue(now time.Time) []string {
	var due []string
	for node, until := range q {
		if !until.After(now) {
			due = append(due, node)
			delete(q, node)
		}
	}
	sort.Strings(due)
	return due
}

// setCondition adds cond to status, or replaces the condition of its type, keeping the
// last transition time when the status does not change (upstream's UpdatePodCondition).
func setCondition(status *corev1.PodStatus, cond corev1.PodCondition, now time.Time) {
	cond.LastTransitionTime = metav1.NewTime(now)
	for i := range status.Conditions {
		if status.Conditions[i].Type != cond.Type {
			continue
		}
		if status.Conditions[i].Status == cond.Status {
			cond.LastTransitionTime = status.Conditions[i].LastTransitionTime
		}
		status.Conditions[i] = cond
		return
	}
	status.Conditions = append(status.Conditions, cond)
}

// failedStatus is the status podgc writes before force-deleting a pod that has not
// finished: phase Failed, observedGeneration current, and cond when given. Without it, a
// pod whose node is gone would stay Running forever, as no kubelet is left to finish it.
func failedStatus(p *corev1.Pod, cond *corev1.PodCondition, now time.Time) corev1.PodStatus {
	status := p.Status.DeepCopy()
	status.Phase = corev1.PodFailed
	// PodObservedGenerationTracking is GA (locked on) in 1.37.
	status.ObservedGeneration = p.Generation
	if cond != nil {
		c := *cond
		c.ObservedGeneration = p.Generation
		setCondition(status, c, now)
	}
	return *status
}
