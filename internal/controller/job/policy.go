package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failureVerdict is what spec.podFailurePolicy says about one failed pod.
type failureVerdict struct {
	// action is the matched rule's action, nil when no rule matched.
	action *batchv1.PodFailurePolicyAction
	// counts says whether the failure counts against backoffLimit (and backoffLimitPerIndex):
	// false only for Ignore.
	counts bool
	// failJob is the Job's failure message when a FailJob rule matched.
	failJob string
}

// matchPodFailurePolicy applies the first rule matching the failed pod: a terminated
// container with a non-zero exit code the rule's operator selects (containers first, then
// init containers), or a pod condition with the rule's type and status.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) failureVerdict {
	if policy == nil {
		return failureVerdict{counts: true}
	}
	for i, rule := range policy.Rules {
		var failJob string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchExitCodes(p, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failJob = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, p.Namespace, p.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			cond := matchPodConditions(p, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			failJob = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				p.Namespace, p.Name, cond.Type, rule.Action, i)
		default:
			continue
		}
		action := rule.Action
		switch action {
		case batchv1.PodFailurePolicyActionIgnore:
			return failureVerdict{action: &action}
		case batchv1.PodFailurePolicyActionFailJob:
			return failureVerdict{action: &action, counts: true, failJob: failJob}
		case batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionCount:
			return failureVerdict{action: &action, counts: true}
		}
		// An action this version does not know: the rule does not apply, as upstream.
	}
	return failureVerdict{counts: true}
}

func matchExitCodes(p *corev1.Pod, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range statuses {
			cs := &statuses[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
				(req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return cs
			}
		}
	}
	return nil
}

func matchPodConditions(p *corev1.Pod, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		for _, pat := range patterns {
			if c.Type == pat.Type && c.Status == pat.Status {
				return c
			}
		}
	}
	return nil
}

// failJobMessage is the message of the first failed pod that a FailJob rule matches.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !isPodFailed(p, job) {
			continue
		}
		if v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); v.failJob != "" {
			return v.failJob, true
		}
	}
	return "", false
}

// countsAsFailure reports whether a failed pod counts against the backoff limit.
func countsAsFailure(job *batchv1.Job, p *corev1.Pod) bool {
	return matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).counts
}

// matchSuccessPolicy reports the first rule of spec.successPolicy the succeeded indexes
// satisfy, with upstream's message. A succeededIndexes rule holds when all its indexes
// succeeded, or succeededCount of them; a rule with only succeededCount when that many
// indexes succeeded.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int32, succeeded intervals) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		met := false
		switch {
		case rule.SucceededIndexes != nil:
			required := parseIntervals(*rule.SucceededIndexes, int(completions))
			if len(required) == 0 {
				continue
			}
			n := required.overlap(succeeded)
			met = n == required.total() || (rule.SucceededCount != nil && n >= int(*rule.SucceededCount))
		case rule.SucceededCount != nil:
			met = succeeded.total() >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
