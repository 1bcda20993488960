package job

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestConverged(t *testing.T) {
	cond := func(t batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: s}
	}
	for _, tc := range []struct {
		name       string
		conditions []batchv1.JobCondition
		want       bool
	}{
		{"no condition", nil, false},
		{"complete", []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue)}, true},
		{"failed", []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)}, true},
		{"success criteria met, not yet complete", []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)}, false},
		{"failure target, not yet failed", []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue)}, false},
		{"complete False", []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionFalse)}, false},
		{"suspended", []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Converged(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.conditions}})
			if got != tc.want || why == "" {
				t.Errorf("Converged = %v, %q; want %v with a reason", got, why, tc.want)
			}
		})
	}
}
