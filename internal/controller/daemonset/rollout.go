package daemonset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcm/kcm/internal/pod"
)

// nodePlan is what the core loop does on one node.
type nodePlan struct {
	create bool
	// remove are pods to delete: excess pods, or pods on a node they may not stay on.
	remove []*corev1.Pod
	// failed are failed pods to delete once the node's backoff allows.
	failed []*corev1.Pod
	// succeeded are pods that ran to completion (a graceful node shutdown, a container that
	// exited 0): deleted at once, so that the node gets a new pod.
	succeeded []*corev1.Pod
}

// planNode is upstream's podsShouldBeOnNode: pods are the DaemonSet's pods targeting the
// node. An eligible node without a pod gets one; failed and succeeded pods are replaced
// (with surge, a node left without a running pod gets its new one at once); on a node with
// more than one running pod, the oldest is kept (with surge, the oldest updated and the
// oldest old one); pods on a node they may no longer run on are deleted.
func planNode(pods []*corev1.Pod, e eligibility, surge bool, hash string, generation *int64) nodePlan {
	var plan nodePlan
	switch {
	case e.shouldRun && len(pods) == 0:
		plan.create = true
	case e.shouldContinueRunning:
		var running []*corev1.Pod
		for _, p := range pods {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodFailed:
				plan.failed = append(plan.failed, p)
			case p.Status.Phase == corev1.PodSucceeded:
				plan.succeeded = append(plan.succeeded, p)
			default:
				running = append(running, p)
			}
		}
		if len(running) <= 1 {
			// Without surge, the replacement waits for the finished pods to be gone.
			plan.create = surge && len(running) == 0 && e.shouldRun
			break
		}
		sortOldestFirst(running)
		if !surge {
			plan.remove = append(plan.remove, running[1:]...)
			break
		}
		var keptNew, keptOld bool
		for _, p := range running {
			if isUpdated(p, hash, generation) {
				if !keptNew {
					keptNew = true
					continue
				}
			} else if !keptOld {
				keptOld = true
				continue
			}
			plan.remove = append(plan.remove, p)
		}
	case len(pods) > 0:
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				plan.remove = append(plan.remove, p)
			}
		}
	}
	return plan
}

// sortOldestFirst orders pods as upstream's podByCreationTimestampAndPhase: running before
// others at equal age, oldest first, name to break ties.
func sortOldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Status.Phase == corev1.PodRunning) != (b.Status.Phase == corev1.PodRunning) {
			return a.Status.Phase == corev1.PodRunning
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// splitPods is upstream's findUpdatedPodsOnNode: the node's one updated and one old pod,
// ignoring pods being deleted; ok is false when it has more than one of either.
func splitPods(pods []*corev1.Pod, hash string, generation *int64) (updated, old *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(p, hash, generation) {
			if updated != nil {
				return nil, nil, false
			}
			updated = p
		} else {
			if old != nil {
				return nil, nil, false
			}
			old = p
		}
	}
	return updated, old, true
}

// rollingBudget is upstream's updatedDesiredNodeCounts: maxSurge and maxUnavailable scaled
// to desired (rounded up); both zero means one unavailable.
func rollingBudget(ds *appsv1.DaemonSet, desired int) (maxSurge, maxUnavailable int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru != nil {
		if ru.MaxSurge != nil {
			maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		} else {
			maxUnavailable = 1
		}
	} else {
		maxUnavailable = 1
	}
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

// rolloutInput is what a rolling-update step decides from.
type rolloutInput struct {
	// nodePods are the DaemonSet's pods by target node.
	nodePods       map[string][]*corev1.Pod
	eligible       func(node string) eligibility
	hash           string
	generation     *int64
	minReadySecs   int32
	now            time.Time
	maxSurge       int
	maxUnavailable int
	desired        int
}

func (in rolloutInput) available(p *corev1.Pod) bool {
	return pod.IsAvailable(p, in.minReadySecs, in.now)
}

func (in rolloutInput) nodes() []string {
	names := make([]string, 0, len(in.nodePods))
	for n := range in.nodePods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// rollingUpdate is upstream's rollingUpdate decision: without surge, old pods are deleted
// (unavailable ones always, available ones while fewer than maxUnavailable nodes lack an
// available pod) and the core loop recreates them; with surge, an updated pod is created
// beside the old one on up to maxSurge nodes and the old pod deleted once the new one is
// available.
func rollingUpdate(in rolloutInput) (remove []*corev1.Pod, create []string) {
	if in.maxSurge == 0 {
		return rollingUpdateNoSurge(in), nil
	}
	var numSurge, numAvailable int
	var allowedNew, candidateNew []string
	var shouldNotRun []*corev1.Pod
	for _, node := range in.nodes() {
		updated, old, ok := splitPods(in.nodePods[node], in.hash, in.generation)
		if !ok {
			numSurge++
			continue
		}
		if old != nil {
			if in.available(old) {
				numAvailable++
			}
		} else if updated != nil && in.available(updated) {
			numAvailable++
		}
		switch {
		case old == nil:
		case updated == nil:
			shouldRun := in.eligible(node).shouldRun
			switch {
			case !in.available(old):
				if !shouldRun {
					remove = append(remove, old)
					continue
				}
				allowedNew = append(allowedNew, node)
			case !shouldRun:
				shouldNotRun = append(shouldNotRun, old)
			case numSurge >= in.maxSurge:
			default:
				candidateNew = append(candidateNew, node)
			}
		default:
			if !in.available(updated) {
				numSurge++
				continue
			}
			remove = append(remove, old)
		}
	}
	if deletable := min(numAvailable-in.desired, len(shouldNotRun)); deletable > 0 {
		remove = append(remove, shouldNotRun[:deletable]...)
	}
	remaining := min(max(in.maxSurge-numSurge, 0), len(candidateNew))
	return remove, append(allowedNew, candidateNew[:remaining]...)
}

func rollingUpdateNoSurge(in rolloutInput) []*corev1.Pod {
	var numUnavailable int
	var allowed, candidates []*corev1.Pod
	for _, node := range in.nodes() {
		updated, old, ok := splitPods(in.nodePods[node], in.hash, in.generation)
		if !ok {
			numUnavailable++
			continue
		}
		switch {
		case (old == nil) == (updated == nil):
			// Nothing or both: the core loop creates or deletes.
			numUnavailable++
		case updated != nil:
			if !in.available(updated) {
				numUnavailable++
			}
		case !in.available(old):
			allowed = append(allowed, old)
			numUnavailable++
		case numUnavailable >= in.maxUnavailable:
		default:
			candidates = append(candidates, old)
		}
	}
	remaining := min(max(in.maxUnavailable-numUnavailable, 0), len(candidates))
	return append(allowed, candidates[:remaining]...)
}
