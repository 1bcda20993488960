package tainteviction

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func noExecute(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoExecute}
}

func tolerate(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func TestEvictionTime(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// timeAdded does not count: the controller counts from when it sees the taint.
	broken := noExecute("example.com/broken", "")
	broken.TimeAdded = ptr.To(metav1.NewTime(now.Add(-time.Hour)))
	tests := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		// comparisonOperators: the TaintTolerationComparisonOperators gate.
		comparisonOperators bool
		wantEvict           bool
		wantAfter           time.Duration
	}{
		{name: "no taints", wantEvict: false},
		{name: "no NoExecute taint", taints: []corev1.Taint{
			{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/slow", Effect: corev1.TaintEffectPreferNoSchedule},
		}},
		{name: "untolerated NoExecute taint: now", taints: []corev1.Taint{broken}, wantEvict: true},
		{name: "a NoSchedule toleration does not tolerate NoExecute", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{{Key: "example.com/broken", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			wantEvict:   true},
		{name: "tolerated for 30s: 30s after now, whatever timeAdded says", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", ptr.To[int64](30))},
			wantEvict:   true, wantAfter: 30 * time.Second},
		{name: "tolerated forever", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", nil)}},
		{name: "one of two taints untolerated: now", taints: []corev1.Taint{broken, noExecute("example.com/other", "")},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", nil)},
			wantEvict:   true},
		{name: "several taints: the shortest toleration", taints: []corev1.Taint{broken, noExecute("example.com/other", ""), noExecute("example.com/third", "")},
			tolerations: []corev1.Toleration{
				tolerate("example.com/broken", ptr.To[int64](300)),
				tolerate("example.com/other", ptr.To[int64](20)),
				tolerate("example.com/third", nil),
			},
			wantEvict: true, wantAfter: 20 * time.Second},
		{name: "forever and for a time: the time", taints: []corev1.Taint{broken, noExecute("example.com/other", "")},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", nil), tolerate("example.com/other", ptr.To[int64](5))},
			wantEvict:   true, wantAfter: 5 * time.Second},
		{name: "the first matching toleration counts, not the longest", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", ptr.To[int64](10)), tolerate("example.com/broken", nil)},
			wantEvict:   true, wantAfter: 10 * time.Second},
		{name: "...nor the shortest", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", nil), tolerate("example.com/broken", ptr.To[int64](10))}},
		{name: "NoSchedule taints are ignored beside a NoExecute one", taints: []corev1.Taint{
			{Key: "example.com/sched", Effect: corev1.TaintEffectNoSchedule}, broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", ptr.To[int64](7))},
			wantEvict:   true, wantAfter: 7 * time.Second},
		{name: "Exists with an empty key tolerates every taint", taints: []corev1.Taint{broken, noExecute("example.com/other", "x")},
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "Exists with an empty key and effect NoExecute, for a time", taints: []corev1.Taint{broken, noExecute("example.com/other", "x")},
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](9)}},
			wantEvict:   true, wantAfter: 9 * time.Second},
		{name: "Equal needs the value", taints: []corev1.Taint{noExecute("example.com/zone", "a")},
			tolerations: []corev1.Toleration{{Key: "example.com/zone", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoExecute}},
			wantEvict:   true},
		{name: "empty operator is Equal", taints: []corev1.Taint{noExecute("example.com/zone", "a")},
			tolerations: []corev1.Toleration{{Key: "example.com/zone", Value: "a"}}},
		{name: "Gt does not match while its feature gate is off", taints: []corev1.Taint{noExecute("example.com/level", "5")},
			tolerations: []corev1.Toleration{{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "1"}},
			wantEvict:   true},
		{name: "Gt matches with its feature gate on", taints: []corev1.Taint{noExecute("example.com/level", "5")},
			tolerations:         []corev1.Toleration{{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "1", TolerationSeconds: ptr.To[int64](30)}},
			comparisonOperators: true, wantEvict: true, wantAfter: 30 * time.Second},
		{name: "Lt matches with its feature gate on", taints: []corev1.Taint{noExecute("example.com/level", "5")},
			tolerations:         []corev1.Toleration{{Key: "example.com/level", Operator: corev1.TolerationOpLt, Value: "9"}},
			comparisonOperators: true},
		{name: "zero seconds: now", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", ptr.To[int64](0))},
			wantEvict:   true},
		{name: "negative seconds: now", taints: []corev1.Taint{broken, noExecute("example.com/other", "")},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", ptr.To[int64](60)), tolerate("example.com/other", ptr.To[int64](-5))},
			wantEvict:   true},
		{name: "huge seconds do not overflow", taints: []corev1.Taint{broken},
			tolerations: []corev1.Toleration{tolerate("example.com/broken", ptr.To[int64](1<<62))},
			wantEvict:   true, wantAfter: time.Duration(maxTolerationSeconds) * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			when, evict := evictionTime(tt.taints, tt.tolerations, now, tt.comparisonOperators)
			if evict != tt.wantEvict {
				t.Fatalf("evict = %v, want %v", evict, tt.wantEvict)
			}
			if !evict {
				if !when.IsZero() {
					t.Errorf("when = %v for no eviction, want zero", when)
				}
				return
			}
			if got := when.Sub(now); got != tt.wantAfter {
				t.Errorf("eviction %v after now, want %v", got, tt.wantAfter)
			}
		})
	}
}

func TestNoExecuteTaints(t *testing.T) {
	taints := []corev1.Taint{
		{Key: "a", Effect: corev1.TaintEffectNoSchedule},
		noExecute("b", ""),
		{Key: "c", Effect: corev1.TaintEffectPreferNoSchedule},
		noExecute("d", "x"),
	}
	got := noExecuteTaints(taints)
	if len(got) != 2 || got[0].Key != "b" || got[1].Key != "d" {
		t.Errorf("noExecuteTaints = %v, want b and d", got)
	}
	if got := noExecuteTaints(nil); got == nil || len(got) != 0 {
		t.Errorf("noExecuteTaints(nil) = %#v, want empty", got)
	}
}

func TestDisruptionTarget(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Minute))
	ours := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ConditionReason, Message: ConditionMessage, LastTransitionTime: earlier}
	tests := []struct {
		name        string
		conditions  []corev1.PodCondition
		wantChanged bool
		wantLTT     metav1.Time
	}{
		{name: "absent: added now", conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			wantChanged: true, wantLTT: metav1.NewTime(now)},
		{name: "already ours: unchanged", conditions: []corev1.PodCondition{ours}, wantLTT: earlier},
		{name: "ours but another observedGeneration: unchanged", conditions: []corev1.PodCondition{func() corev1.PodCondition {
			c := ours
			c.ObservedGeneration = 1
			return c
		}()}, wantLTT: earlier},
		{name: "True for another reason: reason replaced, transition time kept", conditions: []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler, LastTransitionTime: earlier}},
			wantChanged: true, wantLTT: earlier},
		{name: "False: flips now", conditions: []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, LastTransitionTime: earlier}},
			wantChanged: true, wantLTT: metav1.NewTime(now)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cond, changed := disruptionTarget(&corev1.PodStatus{Conditions: tt.conditions}, 3, now)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if cond.Type != corev1.DisruptionTarget || cond.Status != corev1.ConditionTrue || cond.Reason != "DeletionByTaintManager" ||
				cond.Message != "Taint manager: deleting due to NoExecute taint" || cond.ObservedGeneration != 3 {
				t.Errorf("condition = %+v", cond)
			}
			if !cond.LastTransitionTime.Equal(&tt.wantLTT) {
				t.Errorf("lastTransitionTime = %v, want %v", cond.LastTransitionTime, tt.wantLTT)
			}
		})
	}
}
