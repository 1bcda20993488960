package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/kcm/kcm/internal/pod"
)

// DeletionTimeout is how long an entry of status.disruptedPods (written by the eviction API)
// protects its pod: a pod evicted but not seen being deleted within it is counted again.
const DeletionTimeout = 2 * time.Minute

// scaleOfController is what a pod's controller says about the pods it wants: its UID (the
// same controller reached through several pods counts once) and its scale. found is false
// when no known controller matches the reference.
type scaleOfController func(ctx context.Context, ref *metav1.OwnerReference, namespace string) (uid types.UID, scale int32, found bool, err error)

// expectedCounts returns expectedPods and desiredHealthy for the budget's spec, as upstream:
// an integer minAvailable counts the selected pods; a percentage minAvailable and any
// maxUnavailable count the scale of the pods' controllers, rounding the percentage up.
// unmanaged names the selected pods without a controller, which the scale leaves out.
func expectedCounts(ctx context.Context, spec policyv1.PodDisruptionBudgetSpec, pods []*corev1.Pod, scaleOf scaleOfController) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case spec.MaxUnavailable != nil:
		expected, unmanaged, err = expectedScale(ctx, pods, scaleOf)
		if err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = max(expected-int32(maxUnavailable), 0)
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		desired = spec.MinAvailable.IntVal
		expected = int32(len(pods))
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.String:
		expected, unmanaged, err = expectedScale(ctx, pods, scaleOf)
		if err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = int32(minAvailable)
	}
	return expected, desired, unmanaged, nil
}

// expectedScale adds up the scale of every controller of the pods, each controller once.
// A pod without a controller is reported as unmanaged; a pod whose controller has no scale
// is an error.
func expectedScale(ctx context.Context, pods []*corev1.Pod, scaleOf scaleOfController) (int32, []string, error) {
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil {
			unmanaged = append(unmanaged, p.Name)
			continue
		}
		if _, known := scales[ref.UID]; known {
			continue
		}
		uid, scale, found, err := scaleOf(ctx, ref, p.Namespace)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		scales[uid] = scale
	}
	var expected int32
	for _, s := range scales {
		expected += s
	}
	return expected, unmanaged, nil
}

// prunedDisruptedPods keeps the entries of status.disruptedPods whose pod still exists, is
// not being deleted and was evicted less than DeletionTimeout ago. expired are the pods
// whose entry timed out without their deletion; recheck is when the first kept entry
// expires (nil when none is kept).
func prunedDisruptedPods(pods []*corev1.Pod, recorded map[string]metav1.Time, now time.Time) (kept map[string]metav1.Time, expired []*corev1.Pod, recheck *time.Time) {
	kept = map[string]metav1.Time{}
	if recorded == nil {
		return kept, nil, nil
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		at, ok := recorded[p.Name]
		if !ok {
			continue
		}
		deadline := at.Add(DeletionTimeout)
		if deadline.Before(now) {
			expired = append(expired, p)
			continue
		}
		if recheck == nil || deadline.Before(*recheck) {
			recheck = &deadline
		}
		kept[p.Name] = at
	}
	return kept, expired, recheck
}

// countHealthy counts the ready pods that are neither being deleted nor recently evicted.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[p.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if pod.IsReady(p) {
			n++
		}
	}
	return n
}

// disruptionsAllowed is currentHealthy − desiredHealthy, floored at 0, and 0 while the budget
// expects no pods: a budget whose first pods appear before its next sync stays safe.
func disruptionsAllowed(currentHealthy, desiredHealthy, expected int32) int32 {
	if expected <= 0 || currentHealthy <= desiredHealthy {
		return 0
	}
	return currentHealthy - desiredHealthy
}

// newStatus is the budget's status after a successful sync, with the DisruptionAllowed
// condition set by upstream's helper (SufficientPods when a disruption is allowed,
// InsufficientPods otherwise; a transition is stamped with the wall clock, as upstream).
func newStatus(pdb *policyv1.PodDisruptionBudget, currentHealthy, desiredHealthy, expected int32, disrupted map[string]metav1.Time) policyv1.PodDisruptionBudgetStatus {
	updated := &policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptedPods:      disrupted,
		DisruptionsAllowed: disruptionsAllowed(currentHealthy, desiredHealthy, expected),
		CurrentHealthy:     currentHealthy,
		DesiredHealthy:     desiredHealthy,
		ExpectedPods:       expected,
		Conditions:         copyConditions(pdb.Status.Conditions),
	}}
	pdbhelper.UpdateDisruptionAllowedCondition(updated)
	return updated.Status
}

// failedStatus is upstream's fail-safe: whatever went wrong, no disruption is allowed, and
// the DisruptionAllowed condition says why (SyncFailed). The other fields keep their values.
func failedStatus(pdb *policyv1.PodDisruptionBudget, syncErr error, now time.Time) policyv1.PodDisruptionBudgetStatus {
	status := *pdb.Status.DeepCopy()
	status.DisruptionsAllowed = 0
	if status.Conditions == nil {
		status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            syncErr.Error(),
		ObservedGeneration: status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(now),
	})
	return status
}

func copyConditions(in []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
