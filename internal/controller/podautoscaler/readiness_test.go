package podautoscaler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestGroupPods(t *testing.T) {
	// CPU initialization period 5m, initial readiness delay 30s; samples
	// taken 10s ago over a 30s window unless a case says otherwise.
	sampled := PodMetric{Timestamp: calcNow.Add(-10 * time.Second), Window: 30 * time.Second, Value: 100}
	noCondition := func(p *corev1.Pod) { p.Status.Conditions = nil }
	noStart := func(p *corev1.Pod) { p.Status.StartTime = nil }
	tests := []struct {
		name     string
		pod      *corev1.Pod
		sampled  bool
		resource corev1.ResourceName // empty: a custom metric
		want     string              // ready, unready, missing, ignored
	}{
		{name: "running, ready, sampled", pod: testPod("p"), sampled: true, resource: corev1.ResourceCPU, want: "ready"},
		{name: "failed", pod: testPod("p", phase(corev1.PodFailed)), sampled: true, resource: corev1.ResourceCPU, want: "ignored"},
		{name: "being deleted", pod: testPod("p", deleting()), sampled: true, resource: corev1.ResourceCPU, want: "ignored"},
		{name: "pending, even for memory", pod: testPod("p", phase(corev1.PodPending)), sampled: true, resource: corev1.ResourceMemory, want: "unready"},
		{name: "no sample", pod: testPod("p"), resource: corev1.ResourceCPU, want: "missing"},
		{name: "no sample, not ready", pod: testPod("p", neverReady()), resource: corev1.ResourceCPU, want: "missing"},
		{name: "memory: readiness not weighed", pod: testPod("p", neverReady()), sampled: true, resource: corev1.ResourceMemory, want: "ready"},
		{name: "custom metric: readiness not weighed", pod: testPod("p", noCondition), sampled: true, resource: "", want: "ready"},
		{name: "cpu: no Ready condition", pod: testPod("p", noCondition), sampled: true, resource: corev1.ResourceCPU, want: "unready"},
		{name: "cpu: no start time", pod: testPod("p", noStart), sampled: true, resource: corev1.ResourceCPU, want: "unready"},
		{name: "cpu, starting: not ready", pod: testPod("p", started(2*time.Minute, corev1.ConditionFalse, time.Minute)), sampled: true, resource: corev1.ResourceCPU, want: "unready"},
		// Ready 30s ago: a 30s window ending 10s ago began before that.
		{name: "cpu, starting: ready, but the sample's window began before", pod: testPod("p", started(2*time.Minute, corev1.ConditionTrue, 30*time.Second)), sampled: true, resource: corev1.ResourceCPU, want: "unready"},
		{name: "cpu, starting: ready a full window before the sample", pod: testPod("p", started(2*time.Minute, corev1.ConditionTrue, 41*time.Second)), sampled: true, resource: corev1.ResourceCPU, want: "ready"},
		{name: "cpu, started: ready", pod: testPod("p", started(6*time.Minute, corev1.ConditionTrue, 10*time.Second)), sampled: true, resource: corev1.ResourceCPU, want: "ready"},
		// Not ready since 20s after start: it never became ready.
		{name: "cpu, started: never ready", pod: testPod("p", started(6*time.Minute, corev1.ConditionFalse, 6*time.Minute-20*time.Second)), sampled: true, resource: corev1.ResourceCPU, want: "unready"},
		// Not ready since 2 minutes after start: it was ready, and is busy.
		{name: "cpu, started: ready once, not now", pod: testPod("p", started(6*time.Minute, corev1.ConditionFalse, 4*time.Minute)), sampled: true, resource: corev1.ResourceCPU, want: "ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			metrics := PodMetricsInfo{}
			if tc.sampled {
				metrics["p"] = sampled
			}
			g := groupPods([]corev1.Pod{*tc.pod}, metrics, tc.resource, 5*time.Minute, 30*time.Second, calcNow)
			got := map[bool]string{true: "ready"}[g.ready == 1]
			for name, set := range map[string]sets.Set[string]{"unready": g.unready, "missing": g.missing, "ignored": g.ignored} {
				if set.Has("p") {
					if got != "" {
						t.Fatalf("pod in two groups: %s and %s", got, name)
					}
					got = name
				}
			}
			if got != tc.want {
				t.Errorf("grouped %q, want %q", got, tc.want)
			}
		})
	}
}
