package job

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

func TestCreationReason(t *testing.T) {
	failedPolicy := &batchv1.Job{Spec: batchv1.JobSpec{PodReplacementPolicy: ptr.To(batchv1.Failed)}}
	terminatingPolicy := &batchv1.Job{Spec: batchv1.JobSpec{PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed)}}
	noPolicy := &batchv1.Job{}
	for _, tc := range []struct {
		name                string
		job                 *batchv1.Job
		failed, terminating int32
		want                string
	}{
		{"first pods", noPolicy, 0, 0, "new"},
		{"first pods, Failed policy", failedPolicy, 0, 0, "new"},
		{"after a failure, default policy", noPolicy, 1, 0, "recreate_terminating_or_failed"},
		{"while a pod terminates, default policy", noPolicy, 0, 1, "recreate_terminating_or_failed"},
		{"while a pod terminates, TerminatingOrFailed", terminatingPolicy, 0, 2, "recreate_terminating_or_failed"},
		{"after a failure, Failed policy", failedPolicy, 1, 0, "recreate_failed"},
		{"after a failure and while one terminates, Failed policy", failedPolicy, 1, 1, "recreate_failed"},
		// Under Failed a terminating pod alone is not replaced yet: upstream still labels
		// whatever the sync creates by the terminating pod.
		{"while a pod terminates, Failed policy", failedPolicy, 0, 1, "recreate_terminating_or_failed"},
	} {
		if got := creationReason(tc.job, tc.failed, tc.terminating); got != tc.want {
			t.Errorf("%s: creationReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}
