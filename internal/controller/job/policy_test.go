package job

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestMatchPodFailurePolicy(t *testing.T) {
	exitIn := func(action batchv1.PodFailurePolicyAction, container *string, codes ...int32) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: container, Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes,
		}}
	}
	onCondition := func(action batchv1.PodFailurePolicyAction, c corev1.PodConditionType) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: c, Status: corev1.ConditionTrue}}}
	}
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget),
		exitIn(batchv1.PodFailurePolicyActionFailJob, ptr.To("c"), 42),
		exitIn(batchv1.PodFailurePolicyActionFailIndex, nil, 3),
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{5},
		}},
	}}
	sidecarExit := func(code int32) *corev1.Pod {
		p := newPod(corev1.PodFailed)
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}
		return p
	}
	tests := []struct {
		name    string
		policy  *batchv1.PodFailurePolicy
		pod     *corev1.Pod
		action  batchv1.PodFailurePolicyAction // "" for no match
		counts  bool
		failJob string
	}{
		{name: "no policy counts", pod: exited(newPod(corev1.PodFailed), 1, t0), counts: true},
		{name: "condition matched first: ignored", policy: policy, pod: withCondition(exited(newPod(corev1.PodFailed), 42, t0), corev1.DisruptionTarget), action: batchv1.PodFailurePolicyActionIgnore},
		{name: "FailJob with upstream's message", policy: policy, pod: exited(newPod(corev1.PodFailed), 42, t0), action: batchv1.PodFailurePolicyActionFailJob, counts: true,
			failJob: "Container c for pod ns/PODNAME failed with exit code 42 matching FailJob rule at index 1"},
		{name: "FailIndex", policy: policy, pod: exited(newPod(corev1.PodFailed), 3, t0), action: batchv1.PodFailurePolicyActionFailIndex, counts: true},
		{name: "Count by NotIn", policy: policy, pod: exited(newPod(corev1.PodFailed), 7, t0), action: batchv1.PodFailurePolicyActionCount, counts: true},
		{name: "no rule matches: counts", policy: policy, pod: exited(newPod(corev1.PodFailed), 5, t0), counts: true},
		{name: "exit code 0 never matches", policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1}}},
		}}, pod: exited(newPod(corev1.PodFailed), 0, t0), counts: true},
		{name: "init containers are checked too", policy: policy, pod: sidecarExit(3), action: batchv1.PodFailurePolicyActionFailIndex, counts: true},
		{name: "container name restricts", policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitIn(batchv1.PodFailurePolicyActionIgnore, ptr.To("other"), 1)}},
			pod: exited(newPod(corev1.PodFailed), 1, t0), counts: true},
		{name: "FailJob on a condition", policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionFailJob, corev1.DisruptionTarget)}},
			pod: withCondition(newPod(corev1.PodFailed), corev1.DisruptionTarget), action: batchv1.PodFailurePolicyActionFailJob, counts: true,
			failJob: "Pod ns/PODNAME has condition DisruptionTarget matching FailJob rule at index 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := matchPodFailurePolicy(tt.policy, tt.pod)
			got := batchv1.PodFailurePolicyAction("")
			if v.action != nil {
				got = *v.action
			}
			want := tt.failJob
			if want != "" {
				want = strings.ReplaceAll(want, "PODNAME", tt.pod.Name)
			}
			if got != tt.action || v.counts != tt.counts || v.failJob != want {
				t.Errorf("got action %q counts %v failJob %q; want %q %v %q", got, v.counts, v.failJob, tt.action, tt.counts, want)
			}
		})
	}
}

func TestFailJobMessageOnlyForFailedPods(t *testing.T) {
	job := plainJob(ptr.To[int32](1), 1)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}}}
	running := exited(newPod(corev1.PodRunning), 42, t0) // a container restarted in place
	if _, ok := failJobMessage(job, []*corev1.Pod{running}); ok {
		t.Error("a running pod must not fail the Job")
	}
	if _, ok := failJobMessage(job, []*corev1.Pod{running, exited(newPod(corev1.PodFailed), 42, t0)}); !ok {
		t.Error("a failed pod with exit code 42 must fail the Job")
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	rules := func(r ...batchv1.SuccessPolicyRule) *batchv1.SuccessPolicy { return &batchv1.SuccessPolicy{Rules: r} }
	tests := []struct {
		name      string
		policy    *batchv1.SuccessPolicy
		succeeded string
		want      string
	}{
		{name: "no policy", succeeded: "0-9"},
		{name: "nothing succeeded", policy: rules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](0)})},
		{name: "all listed indexes", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-3")}), succeeded: "0-3", want: "Matched rules at index 0"},
		{name: "one listed index missing", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-3")}), succeeded: "0,1,3,4"},
		{name: "count within the listed indexes", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](2)}), succeeded: "1,4,7", want: "Matched rules at index 0"},
		{name: "count outside the listed indexes does not help", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](2)}), succeeded: "1,7-9"},
		{name: "count alone", policy: rules(
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0")},
			batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](3)},
		), succeeded: "2,5,9", want: "Matched rules at index 1"},
		{name: "indexes beyond completions are ignored", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("12-14")}), succeeded: "0-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, ok := matchSuccessPolicy(tt.policy, 10, parseIntervals(tt.succeeded, 10))
			if ok != (tt.want != "") || msg != tt.want {
				t.Errorf("got %q %v, want %q", msg, ok, tt.want)
			}
		})
	}
}
