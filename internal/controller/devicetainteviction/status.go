package devicetainteviction

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ruleCounts is what a DeviceTaintRule's status reports: the pods its taint evicts (or
// would, for effect None) and in how many namespaces, the pods it evicted since the
// controller started, and for effect None the published and allocated devices it selects.
type ruleCounts struct {
	Pending, Namespaces, Evicted int64
	SliceDevices, Allocated      int64
}

// plural is "1 <one>" or "<n> <many>".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ruleCondition is upstream's EvictionInProgress condition of a DeviceTaintRule
// (LastTransitionTime left to the caller).
func ruleCondition(rule *resourceapi.DeviceTaintRule, c ruleCounts) metav1.Condition {
	cond := metav1.Condition{
		Type:               resourceapi.DeviceTaintConditionEvictionInProgress,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: rule.Generation,
	}
	switch rule.Spec.Taint.Effect {
	case resourceapi.DeviceTaintEffectNoExecute:
		switch {
		case c.Pending > 0:
			cond.Status = metav1.ConditionTrue
			cond.Reason = "PodsPendingEviction"
			verb := " needs"
			if c.Pending != 1 {
				verb = " need"
			}
			cond.Message = plural(c.Pending, "pod", "pods") + verb + " to be evicted in " +
				plural(c.Namespaces, "namespace.", "different namespaces.")
		case c.Evicted > 0:
			cond.Reason = "Completed"
		default:
			cond.Reason = "NotStarted"
		}
	case resourceapi.DeviceTaintEffectNone:
		cond.Reason = "NoEffect"
		cond.Message = plural(c.SliceDevices, "published device selected. ", "published devices selected. ") +
			plural(c.Allocated, "allocated device selected. ", "allocated devices selected. ") +
			plural(c.Pending, "pod would be evicted in ", "pods would be evicted in ") +
			plural(c.Namespaces, "namespace ", "different namespaces ") +
			"if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
	default:
		cond.Reason = "OtherEffect"
		cond.Message = "Eviction only happens for the NoExecute effect."
	}
	if c.Evicted > 0 {
		if cond.Message != "" {
			cond.Message += " "
		}
		cond.Message += plural(c.Evicted, "pod ", "pods ") + "evicted since starting the controller."
	}
	return cond
}
