package tainteviction

import (
	"math"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// maxTolerationSeconds is the longest toleration a time.Duration can hold; longer ones are
// cut to it rather than overflow.
const maxTolerationSeconds = int64(math.MaxInt64 / int64(time.Second))

// evictionTime decides whether and when a pod with the given tolerations is to be deleted
// from a node with the given taints, counting from since: the moment the controller saw the
// need, as upstream counts (not the taint's timeAdded). Only NoExecute taints count.
//
//   - a NoExecute taint that no toleration tolerates: evict at since;
//   - every NoExecute taint tolerated: each taint is matched by the first toleration that
//     tolerates it, and the pod goes after the shortest tolerationSeconds of those, a
//     negative one counting as zero;
//   - no NoExecute taint, or every matching toleration without tolerationSeconds: never.
//
// comparisonOperators is upstream's TaintTolerationComparisonOperators gate (alpha, off by
// default in v1.37): off, the numeric operators Lt and Gt never match.
func evictionTime(taints []corev1.Taint, tolerations []corev1.Toleration, since time.Time, comparisonOperators bool) (time.Time, bool) {
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), taints, tolerations, isNoExecute, comparisonOperators); untolerated {
		return since, true
	}
	shortest := int64(-1) // -1: tolerated forever so far
	for i := range taints {
		t := &taints[i]
		if !isNoExecute(t) {
			continue
		}
		tol := matchingToleration(t, tolerations, comparisonOperators)
		if tol.TolerationSeconds == nil {
			continue
		}
		s := min(max(*tol.TolerationSeconds, 0), maxTolerationSeconds)
		if shortest < 0 || s < shortest {
			shortest = s
		}
	}
	if shortest < 0 {
		return time.Time{}, false
	}
	return since.Add(time.Duration(shortest) * time.Second), true
}

func isNoExecute(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }

// matchingToleration returns the first toleration that tolerates the taint, which counts for
// its tolerationSeconds (upstream's GetMatchingTolerations lives in k8s.io/kubernetes, which
// kcm does not import); the caller knows that one does.
func matchingToleration(t *corev1.Taint, tolerations []corev1.Toleration, comparisonOperators bool) *corev1.Toleration {
	i := slices.IndexFunc(tolerations, func(tol corev1.Toleration) bool {
		return tol.ToleratesTaint(logr.Discard(), t, comparisonOperators)
	})
	return &tolerations[i]
}

// noExecuteTaints returns the node's NoExecute taints, the only ones this controller acts on.
func noExecuteTaints(taints []corev1.Taint) []corev1.Taint {
	out := []corev1.Taint{}
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// disruptionTarget returns the pod's status conditions with upstream's DisruptionTarget
// condition for a taint eviction, and whether that changed anything. As upstream, an
// existing condition of the same status keeps its transition time, and a difference in
// observedGeneration alone is no change.
func disruptionTarget(status *corev1.PodStatus, generation int64, now time.Time) (corev1.PodCondition, bool) {
	cond := corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		ObservedGeneration: generation,
		Status:             corev1.ConditionTrue,
		Reason:             ConditionReason,
		Message:            ConditionMessage,
		LastTransitionTime: metav1.NewTime(now),
	}
	for _, old := range status.Conditions {
		if old.Type != corev1.DisruptionTarget {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		same := old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message &&
			old.LastProbeTime.Equal(&cond.LastProbeTime) && old.LastTransitionTime.Equal(&cond.LastTransitionTime)
		return cond, !same
	}
	return cond, true
}
