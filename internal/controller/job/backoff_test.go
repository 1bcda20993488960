package job

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBackoffDelay(t *testing.T) {
	base, maxDelay := 10*time.Second, 10*time.Minute
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute}
	for i, w := range want {
		if got := backoffDelay(int32(i+1), base, maxDelay); got != w {
			t.Errorf("failure %d: %v, want %v", i+1, got, w)
		}
	}
	if got := backoffDelay(1000, base, maxDelay); got != maxDelay {
		t.Errorf("1000 failures: %v", got)
	}
}

func TestRemainingBackoff(t *testing.T) {
	last := t0.Add(-15 * time.Second)
	tests := []struct {
		failures int32
		last     *time.Time
		want     time.Duration
	}{
		{failures: 0, last: &last, want: 0},
		{failures: 1, last: nil, want: 0},
		{failures: 1, last: &last, want: 0},                // 10s passed 5s ago
		{failures: 2, last: &last, want: 5 * time.Second},  // 20s
		{failures: 3, last: &last, want: 25 * time.Second}, // 40s
	}
	for _, tt := range tests {
		if got := remainingBackoff(tt.failures, tt.last, t0, 10*time.Second, time.Minute); got != tt.want {
			t.Errorf("failures %d: %v, want %v", tt.failures, got, tt.want)
		}
	}
}

func TestNextBackoffRecord(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	failedAt := func(d time.Duration) *corev1.Pod { return exited(newPod(corev1.PodFailed), 1, at(d)) }
	succeededAt := func(d time.Duration) *corev1.Pod { return exited(newPod(corev1.PodSucceeded), 0, at(d)) }
	old := backoffRecord{failuresAfterLastSuccess: 2, lastFailure: ptr.To(at(-time.Minute))}
	tests := []struct {
		name      string
		old       backoffRecord
		succeeded []*corev1.Pod
		failed    []*corev1.Pod
		want      backoffRecord
	}{
		{name: "nothing new", old: old, want: old},
		{name: "failures add up", old: old, failed: []*corev1.Pod{failedAt(2 * time.Second), failedAt(time.Second)},
			want: backoffRecord{failuresAfterLastSuccess: 4, lastFailure: ptr.To(at(2 * time.Second))}},
		{name: "a success resets", old: old, succeeded: []*corev1.Pod{succeededAt(0)}, want: backoffRecord{}},
		{name: "only failures after the last success count", old: old,
			succeeded: []*corev1.Pod{succeededAt(10 * time.Second), succeededAt(time.Second)},
			failed:    []*corev1.Pod{failedAt(5 * time.Second), failedAt(11 * time.Second), failedAt(12 * time.Second)},
			want:      backoffRecord{failuresAfterLastSuccess: 2, lastFailure: ptr.To(at(12 * time.Second))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nextBackoffRecord(tt.old, tt.succeeded, tt.failed)
			if got.failuresAfterLastSuccess != tt.want.failuresAfterLastSuccess || !ptr.Equal(got.lastFailure, tt.want.lastFailure) {
				t.Errorf("got %d %v, want %d %v", got.failuresAfterLastSuccess, got.lastFailure, tt.want.failuresAfterLastSuccess, tt.want.lastFailure)
			}
		})
	}
}

func TestFinishTime(t *testing.T) {
	containers := exited(newPod(corev1.PodFailed), 1, t0)
	notReady := newPod(corev1.PodFailed)
	notReady.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(time.Second))}}
	deleted := deleting(newPod(corev1.PodRunning))
	deleted.DeletionGracePeriodSeconds = ptr.To[int64](30)
	sidecarRunning := exited(newPod(corev1.PodFailed), 1, t0)
	sidecarRunning.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
	sidecarRunning.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	plain := newPod(corev1.PodFailed)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
	}{
		{name: "containers", pod: containers, want: t0},
		{name: "ready false", pod: notReady, want: t0.Add(time.Second)},
		{name: "deleted, less the grace period", pod: deleted, want: t0.Add(-30 * time.Second)},
		{name: "sidecar still running: not finished by containers", pod: sidecarRunning, want: sidecarRunning.CreationTimestamp.Time},
		{name: "creation", pod: plain, want: plain.CreationTimestamp.Time},
	}
	for _, tt := range tests {
		if got := finishTime(tt.pod); !got.Equal(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
