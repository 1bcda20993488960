package job

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// With MutableSchedulingDirectivesForSuspendedJobs off, upstream keeps a suspended Job's
// startTime; resuming still restarts it.
func TestSuspensionKeepsStartTimeWithTheGateOff(t *testing.T) {
	started := metav1.NewTime(t0.Add(-time.Hour))
	job := plainJob(ptr.To[int32](1), 1)
	job.Status.StartTime = ptr.To(started)
	job.Spec.Suspend = ptr.To(true)
	if r, _ := applySuspension(job, t0, false); r != "Suspended" || job.Status.StartTime == nil || !job.Status.StartTime.Equal(&started) {
		t.Errorf("suspend: %q, startTime %v, want %v kept", r, job.Status.StartTime, started)
	}
	job.Spec.Suspend = ptr.To(false)
	later := t0.Add(time.Minute)
	if r, _ := applySuspension(job, later, false); r != "Resumed" || !job.Status.StartTime.Time.Equal(later) {
		t.Errorf("resume: %q, startTime %v, want %v", r, job.Status.StartTime, later)
	}
}
