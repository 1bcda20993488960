package job

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is job-controller's convergence rule (the SLIs of issue 37).
var Convergence = convergence.Rule{
	Controller:  ControllerName,
	Object:      &batchv1.Job{},
	Converged:   func(o client.Object) (bool, string) { return Converged(o.(*batchv1.Job)) },
	Description: "finished: the Complete or Failed condition is True",
}

// Converged is job-controller's rule: the Job has finished, its Complete or Failed condition
// True (the interim SuccessCriteriaMet and FailureTarget are not yet finished), with what it
// waits for in a few words. A suspended or long-running Job is not converged: the clock
// measures the Job's whole run.
func Converged(j *batchv1.Job) (bool, string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, "Complete"
		case batchv1.JobFailed:
			return true, "Failed: " + c.Reason
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return false, "suspended"
	}
	return false, "not finished"
}
