package nodelifecycle

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints maps a node condition and status to the taint key upstream keeps in step
// with it.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
}

// managedNoScheduleKeys are the NoSchedule taints this controller owns.
var managedNoScheduleKeys = map[string]bool{
	corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true,
	corev1.TaintNodeMemoryPressure: true, corev1.TaintNodeDiskPressure: true,
	corev1.TaintNodeNetworkUnavailable: true, corev1.TaintNodePIDPressure: true,
	corev1.TaintNodeUnschedulable: true,
}

// noScheduleTaints returns the node's taints with the managed NoSchedule taints brought in
// line with its conditions and spec.unschedulable, and whether that changed anything.
// Taints of others and of other effects are kept as they are.
func noScheduleTaints(node *corev1.Node) ([]corev1.Taint, bool) {
	want := map[string]bool{}
	for _, c := range node.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok {
			want[key] = true
		}
	}
	if node.Spec.Unschedulable {
		want[corev1.TaintNodeUnschedulable] = true
	}
	var out []corev1.Taint
	have := map[string]bool{}
	changed := false
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && managedNoScheduleKeys[t.Key] {
			if !want[t.Key] || have[t.Key] {
				changed = true
				continue
			}
			have[t.Key] = true
		}
		out = append(out, t)
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if !have[key] {
			out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
			changed = true
		}
	}
	return out, changed
}

// noExecuteKey is the NoExecute taint a node with this Ready status should carry, "" for a
// ready node.
func noExecuteKey(ready corev1.ConditionStatus) string {
	switch ready {
	case corev1.ConditionFalse:
		return corev1.TaintNodeNotReady
	case corev1.ConditionUnknown:
		return corev1.TaintNodeUnreachable
	}
	return ""
}

// withNoExecute returns the node's taints carrying exactly the NoExecute taint key (none
// when key is ""), of the two this controller manages, and whether that changed anything.
// A newly added taint records now as its timeAdded, from which tolerationSeconds count.
func withNoExecute(taints []corev1.Taint, key string, now time.Time) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	changed, present := false, false
	for _, t := range taints {
		managed := t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable)
		if managed && (t.Key != key || present) {
			changed = true
			continue
		}
		if managed {
			present = true
		}
		out = append(out, t)
	}
	if key != "" && !present {
		added := metav1.NewTime(now)
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
		changed = true
	}
	return out, changed
}

// hasNoExecute reports whether the node carries the NoExecute taint key.
func hasNoExecute(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}
