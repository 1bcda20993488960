package podautoscaler

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setCondition sets (or adds) the condition of the type in st; its transition time moves to
// now only when the status changes, as upstream's setConditionInList.
func setCondition(st *autoscalingv2.HorizontalPodAutoscalerStatus, now time.Time, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	st.Conditions = setConditionInList(st.Conditions, t, status, reason, metav1.NewTime(now), format, args...)
}

func setConditionInList(list []autoscalingv2.HorizontalPodAutoscalerCondition, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string, now metav1.Time, format string, args ...any) []autoscalingv2.HorizontalPodAutoscalerCondition {
	i := 0
	for ; i < len(list) && list[i].Type != t; i++ {
	}
	if i == len(list) {
		list = append(list, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
	}
	c := &list[i]
	if c.Status != status {
		c.LastTransitionTime = now
	}
	c.Status = status
	c.Reason = reason
	c.Message = fmt.Sprintf(format, args...)
	return list
}

// removeCondition drops the condition of the type from st.
func removeCondition(st *autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) {
	kept := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	st.Conditions = kept
}

// conditionTrue reports whether st's condition of the type is True.
func conditionTrue(st *autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
