package cronjob

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The decisions of the controller: pure functions of the CronJob, its Jobs and the time now.

// notice is an Event the reconciler is to record on the CronJob, with upstream's reason and
// wording.
type notice struct {
	Type, Reason, Action, Note string
	// Related is the Job the Event is about, if any: Events about different Jobs stay
	// apart instead of being counted as one series.
	Related *batchv1.Job
}

func normal(reason, action, format string, args ...any) notice {
	return notice{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...)}
}

func warning(reason, action, format string, args ...any) notice {
	return notice{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...)}
}

// finished returns the Job's terminal condition (Complete or Failed), if any.
func finished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

func succeeded(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func activeIndex(st *batchv1.CronJobStatus, uid types.UID) int {
	return slices.IndexFunc(st.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

// removeActive drops the Job with this UID from status.active.
func removeActive(st *batchv1.CronJobStatus, uid types.UID) {
	st.Active = slices.DeleteFunc(st.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

// accounting is what the CronJob's Jobs say about its status.
type accounting struct {
	Events []notice
	// Unexpected are unfinished Jobs the CronJob controls that status.active does not list.
	Unexpected []*batchv1.Job
	// Missing are the entries of status.active with no such Job among jobs.
	Missing []corev1.ObjectReference
}

// accountJobs takes finished Jobs out of status.active (SawCompletedJob), moves
// lastSuccessfulTime to the latest completion, and reports unexpected and missing Jobs,
// which need the API server's word before anything is done about them.
func accountJobs(st *batchv1.CronJobStatus, jobs []*batchv1.Job) accounting {
	var out accounting
	seen := make(map[types.UID]bool, len(jobs))
	for _, j := range jobs {
		seen[j.UID] = true
		listed := activeIndex(st, j.UID) >= 0
		cond, done := finished(j)
		switch {
		case !done && !listed:
			out.Unexpected = append(out.Unexpected, j)
		case done:
			if listed {
				removeActive(st, j.UID)
				e := normal("SawCompletedJob", "Sync", "Saw completed job: %s, condition: %v", j.Name, cond)
				e.Related = j
				out.Events = append(out.Events, e)
			}
			// A successful Job counts even when it is no longer listed as active.
			if succeeded(j) && j.Status.CompletionTime != nil &&
				(st.LastSuccessfulTime == nil || j.Status.CompletionTime.After(st.LastSuccessfulTime.Time)) {
				st.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
			}
		}
	}
	for _, ref := range st.Active {
		if !seen[ref.UID] {
			out.Missing = append(out.Missing, ref)
		}
	}
	return out
}

// historyToDelete are the finished Jobs beyond successfulJobsHistoryLimit and
// failedJobsHistoryLimit, oldest start first. A nil limit keeps every Job of its kind.
func historyToDelete(spec *batchv1.CronJobSpec, jobs []*batchv1.Job) []*batchv1.Job {
	var ok, failed []*batchv1.Job
	for _, j := range jobs {
		switch cond, _ := finished(j); cond {
		case batchv1.JobComplete:
			ok = append(ok, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	var out []*batchv1.Job
	for _, h := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{ok, spec.SuccessfulJobsHistoryLimit}, {failed, spec.FailedJobsHistoryLimit}} {
		if h.limit == nil || len(h.jobs) <= int(*h.limit) {
			continue
		}
		slices.SortFunc(h.jobs, byStartTime)
		out = append(out, h.jobs[:len(h.jobs)-int(*h.limit)]...)
	}
	return out
}

// byStartTime orders Jobs by status.startTime, Jobs not started last, names breaking ties.
func byStartTime(a, b *batchv1.Job) int {
	as, bs := a.Status.StartTime, b.Status.StartTime
	switch {
	case as == nil && bs != nil:
		return 1
	case as != nil && bs == nil:
		return -1
	case as.Equal(bs):
		return cmp.Compare(a.Name, b.Name)
	case as.Before(bs):
		return -1
	default:
		return 1
	}
}

// plan is what to do about the schedule of a CronJob whose status.active is up to date.
type plan struct {
	// Start is set when the Job for ScheduledTime is to be created now.
	Start         bool
	ScheduledTime time.Time
	// Replace: delete the active Jobs before starting (concurrencyPolicy Replace).
	Replace bool
	// RequeueAfter is when to look again; 0 means only on a change.
	RequeueAfter time.Duration
	// Terminal is set for input that no retry can fix; an Event explains it.
	Terminal error
	Events   []notice
}

// decide applies the schedule, time zone, suspend, startingDeadlineSeconds and
// concurrencyPolicy to a CronJob at time now.
func decide(cj *batchv1.CronJob, now time.Time) plan {
	var p plan
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			p.Events = append(p.Events, warning("UnknownTimeZone", "Schedule", "invalid timeZone: %q: %s", *cj.Spec.TimeZone, err))
			p.Terminal = fmt.Errorf("invalid timeZone %q: %w", *cj.Spec.TimeZone, err)
			return p
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return p
	}
	if tzInSchedule(cj) {
		p.Events = append(p.Events, warning("UnsupportedSchedule", "Schedule",
			"CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule))
	}
	sched, err := parseSchedule(scheduleSpec(cj))
	if err != nil {
		p.Events = append(p.Events, warning("UnparseableSchedule", "Schedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err))
		p.Terminal = fmt.Errorf("unparseable schedule %q: %w", cj.Spec.Schedule, err)
		return p
	}
	scheduled, missed, err := nextScheduleTime(cj, now, sched)
	if err != nil {
		p.Events = append(p.Events, warning("InvalidSchedule", "Schedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err))
		p.Terminal = fmt.Errorf("invalid schedule %q: %w", cj.Spec.Schedule, err)
		return p
	}
	if scheduled == nil {
		p.RequeueAfter = requeueAfter(cj, now, sched)
		return p
	}
	if missed == manyMissed {
		p.Events = append(p.Events, warning("TooManyMissedTimes", "Schedule",
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"))
	}
	p.RequeueAfter = requeueAfter(cj, now, sched)
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		p.Events = append(p.Events, warning("MissSchedule", "Schedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z)))
		return p
	}
	name := jobName(cj, *scheduled)
	if slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.Name == name && r.Namespace == cj.Namespace }) ||
		cj.Status.LastScheduleTime.Equal(&metav1.Time{Time: *scheduled}) {
		// Already started.
		return p
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0 {
		p.Events = append(p.Events, normal("JobAlreadyActive", "Schedule", "Not starting job because prior execution is running and concurrency policy is Forbid"))
		return p
	}
	p.Start, p.ScheduledTime = true, *scheduled
	p.Replace = cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent && len(cj.Status.Active) > 0
	// Once started, the next wake-up counts from this run.
	after := cj.DeepCopy()
	after.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	p.RequeueAfter = requeueAfter(after, now, sched)
	return p
}

// requeueOnScheduleChange is when to look at a CronJob whose schedule or time zone just
// changed: at its next schedule time, as upstream, rather than at once.
func requeueOnScheduleChange(cj *batchv1.CronJob, now time.Time) (time.Duration, error) {
	sched, err := parseSchedule(scheduleSpec(cj))
	if err != nil {
		return 0, err
	}
	return requeueAfter(cj, now, sched), nil
}

// jobFromTemplate is the Job a CronJob starts for a schedule time: its jobTemplate with the
// template's labels and annotations, the scheduled time as an annotation in the CronJob's
// time zone, named after the time and controlled by the CronJob.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	loc, err := location(cj)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(cj.Spec.JobTemplate.Labels))
	for k, v := range cj.Spec.JobTemplate.Labels {
		labels[k] = v
	}
	annotations := make(map[string]string, len(cj.Spec.JobTemplate.Annotations)+1)
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cj.Namespace,
			Name:            jobName(cj, scheduled),
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job, nil
}
