package podautoscaler

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setCondition sets (or adds) the condition of the type; its transition time moves only when
// the status changes, as upstream's setConditionInList.
func setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	hpa.Status.Conditions = setConditionInList(hpa.Status.Conditions, t, status, reason, metav1.Now(), format, args...)
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

// removeCondition drops the condition of the type.
func removeCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) {
	kept := hpa.Status.Conditions[:0]
	for _, c := range hpa.Status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	hpa.Status.Conditions = kept
}

// conditionTrue reports whether the HPA's condition of the type is True.
func conditionTrue(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
