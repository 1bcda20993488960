package cronjob

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func policy(p batchv1.ConcurrencyPolicy) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = p }
}

func suspended(cj *batchv1.CronJob) { cj.Spec.Suspend = new(true) }

func active(names ...string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) {
		for _, n := range names {
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: cj.Namespace, Name: n, UID: types.UID(n + "-uid")})
		}
	}
}

func reasons(events []notice) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name        string
		cj          *batchv1.CronJob
		now         string
		wantStart   string // scheduled time, "" for no start
		wantReplace bool
		wantRequeue time.Duration
		wantTerm    bool
		wantEvents  []string
		wantNote    string // part of the first event's note
	}{
		{name: "nothing due: wait for the first time", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T09:55:00Z",
			wantRequeue: 5*time.Minute + nextScheduleDelta},
		{name: "due: start it, then wait for the next", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T10:00:02Z",
			wantStart: "2026-03-02T10:00:00Z", wantRequeue: 59*time.Minute + 58*time.Second + nextScheduleDelta},
		{name: "missed a few: start only the latest", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T12:30:00Z",
			wantStart: "2026-03-02T12:00:00Z", wantRequeue: 30*time.Minute + nextScheduleDelta},
		{name: "missed over 100: warn and start the latest", cj: cronJob("* * * * *", "2026-03-01T00:00:00Z"), now: "2026-03-02T12:30:30Z",
			wantStart: "2026-03-02T12:30:00Z", wantRequeue: 30*time.Second + nextScheduleDelta, wantEvents: []string{"TooManyMissedTimes"},
			wantNote: "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"},
		{name: "a deadline keeps the count small", cj: cronJob("* * * * *", "2026-03-01T00:00:00Z", deadline(200)), now: "2026-03-02T12:30:30Z",
			wantStart: "2026-03-02T12:30:00Z", wantRequeue: 30*time.Second + nextScheduleDelta},
		{name: "past the starting deadline: nothing", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), deadline(60)), now: "2026-03-02T11:02:00Z",
			wantRequeue: 58*time.Minute + nextScheduleDelta},
		{name: "within the starting deadline: start", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), deadline(180)), now: "2026-03-02T11:02:00Z",
			wantStart: "2026-03-02T11:00:00Z", wantRequeue: 58*time.Minute + nextScheduleDelta},
		{name: "already run (lastScheduleTime)", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T11:00:00Z")), now: "2026-03-02T11:02:00Z",
			wantRequeue: 58*time.Minute + nextScheduleDelta},
		{name: "already run (its Job is active)", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), active("cj-29540820")), now: "2026-03-02T11:02:00Z",
			wantRequeue: 58*time.Minute + nextScheduleDelta},
		{name: "suspended: nothing, no requeue", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z", suspended), now: "2026-03-02T10:00:02Z"},
		{name: "Allow with a Job running: start another", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), active("cj-29540760")), now: "2026-03-02T11:00:01Z",
			wantStart: "2026-03-02T11:00:00Z", wantRequeue: 59*time.Minute + 59*time.Second + nextScheduleDelta},
		{name: "Forbid with a Job running: skip", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), active("cj-29540760"), policy(batchv1.ForbidConcurrent)), now: "2026-03-02T11:00:01Z",
			wantRequeue: 59*time.Minute + 59*time.Second + nextScheduleDelta, wantEvents: []string{"JobAlreadyActive"},
			wantNote: "Not starting job because prior execution is running and concurrency policy is Forbid"},
		{name: "Forbid with nothing running: start", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), policy(batchv1.ForbidConcurrent)), now: "2026-03-02T11:00:01Z",
			wantStart: "2026-03-02T11:00:00Z", wantRequeue: 59*time.Minute + 59*time.Second + nextScheduleDelta},
		{name: "Replace with a Job running: replace it", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), active("cj-29540760"), policy(batchv1.ReplaceConcurrent)), now: "2026-03-02T11:00:01Z",
			wantStart: "2026-03-02T11:00:00Z", wantReplace: true, wantRequeue: 59*time.Minute + 59*time.Second + nextScheduleDelta},
		{name: "Replace with nothing running: just start", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), policy(batchv1.ReplaceConcurrent)), now: "2026-03-02T11:00:01Z",
			wantStart: "2026-03-02T11:00:00Z", wantRequeue: 59*time.Minute + 59*time.Second + nextScheduleDelta},
		{name: "time zone", cj: cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Asia/Tokyo")), now: "2026-03-03T00:00:30Z",
			wantStart: "2026-03-03T00:00:00Z", wantRequeue: 24*time.Hour - 30*time.Second + nextScheduleDelta},
		{name: "unknown time zone: warn, terminal", cj: cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Mars/Olympus")), now: "2026-03-03T00:00:30Z",
			wantTerm: true, wantEvents: []string{"UnknownTimeZone"}, wantNote: `invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus`},
		{name: "unknown time zone is reported even when suspended", cj: cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Mars/Olympus"), suspended), now: "2026-03-03T00:00:30Z",
			wantTerm: true, wantEvents: []string{"UnknownTimeZone"}},
		{name: "unparseable schedule: warn, terminal", cj: cronJob("every day", "2026-03-02T00:30:00Z"), now: "2026-03-03T00:00:30Z",
			wantTerm: true, wantEvents: []string{"UnparseableSchedule"}, wantNote: `unparseable schedule: "every day" : expected exactly 5 fields, found 2: [every day]`},
		{name: "unparseable but suspended: quiet", cj: cronJob("every day", "2026-03-02T00:30:00Z", suspended), now: "2026-03-03T00:00:30Z"},
		{name: "schedule that never fires: warn, terminal", cj: cronJob("0 0 30 2 *", "2026-03-02T00:30:00Z"), now: "2026-03-03T00:00:30Z",
			wantTerm: true, wantEvents: []string{"InvalidSchedule"}, wantNote: "invalid schedule: 0 0 30 2 * : time difference between two schedules is less than 1 second"},
		{name: "TZ in schedule: warn, run in that zone", cj: cronJob("TZ=Asia/Tokyo 0 9 * * *", "2026-03-02T00:30:00Z"), now: "2026-03-03T00:00:30Z",
			wantStart: "2026-03-03T00:00:00Z", wantRequeue: 24*time.Hour - 30*time.Second + nextScheduleDelta, wantEvents: []string{"UnsupportedSchedule"},
			wantNote: `CRON_TZ or TZ used in schedule "TZ=Asia/Tokyo 0 9 * * *" is not officially supported`},
		{name: "TZ= alone: warned twice, no crash", cj: cronJob("TZ=", "2026-03-02T00:30:00Z"), now: "2026-03-03T00:00:30Z",
			wantTerm: true, wantEvents: []string{"UnsupportedSchedule", "UnparseableSchedule"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.cj.DeepCopy()
			p := decide(tt.cj, at(tt.now))
			if tt.wantStart == "" {
				if p.Start {
					t.Errorf("starts the Job for %v, want nothing started", p.ScheduledTime.UTC())
				}
			} else if !p.Start || !p.ScheduledTime.Equal(at(tt.wantStart)) {
				t.Errorf("start = %v at %v, want a start at %s", p.Start, p.ScheduledTime.UTC(), tt.wantStart)
			}
			if p.Replace != tt.wantReplace {
				t.Errorf("replace = %v, want %v", p.Replace, tt.wantReplace)
			}
			if p.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %v, want %v", p.RequeueAfter, tt.wantRequeue)
			}
			if (p.Terminal != nil) != tt.wantTerm {
				t.Errorf("terminal = %v, want %v", p.Terminal, tt.wantTerm)
			}
			if got := reasons(p.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %v, want %v", got, tt.wantEvents)
			}
			if tt.wantNote != "" && !strings.Contains(p.Events[0].Note, tt.wantNote) {
				t.Errorf("note = %q, want it to contain %q", p.Events[0].Note, tt.wantNote)
			}
			for _, e := range p.Events {
				if e.Action == "" || (e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning) {
					t.Errorf("event %+v needs an action and a type", e)
				}
			}
			if !equalCronJobs(before, tt.cj) {
				t.Error("decide changed its input")
			}
		})
	}
}

func equalCronJobs(a, b *batchv1.CronJob) bool {
	return a.String() == b.String()
}

func job(name string, mods ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
	for _, m := range mods {
		m(j)
	}
	return j
}

func started(s string) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: at(s)} }
}

func completedAt(s string) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Status.CompletionTime = &metav1.Time{Time: at(s)}
		j.Status.Conditions = append(j.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})
	}
}

func failedJob(j *batchv1.Job) {
	j.Status.Conditions = append(j.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue},
		batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue})
}

// failureTargetOnly is a Job about to fail: not finished yet.
func failureTargetOnly(j *batchv1.Job) {
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue})
}

func TestAccountJobs(t *testing.T) {
	tests := []struct {
		name               string
		status             batchv1.CronJobStatus
		jobs               []*batchv1.Job
		wantActive         []string
		wantLastSuccessful string
		wantEvents         []string
		wantNote           string
		wantUnexpected     []string
		wantMissing        []string
	}{
		{name: "running Jobs stay active",
			status: statusWith(active("a", "b")), jobs: []*batchv1.Job{job("a"), job("b", failureTargetOnly)},
			wantActive: []string{"a", "b"}},
		{name: "a completed Job leaves active, sets lastSuccessfulTime",
			status: statusWith(active("a", "b")), jobs: []*batchv1.Job{job("a", completedAt("2026-03-02T10:05:00Z")), job("b")},
			wantActive: []string{"b"}, wantLastSuccessful: "2026-03-02T10:05:00Z", wantEvents: []string{"SawCompletedJob"},
			wantNote: "Saw completed job: a, condition: Complete"},
		{name: "a failed Job leaves active, no success",
			status: statusWith(active("a")), jobs: []*batchv1.Job{job("a", failedJob)},
			wantEvents: []string{"SawCompletedJob"}, wantNote: "Saw completed job: a, condition: Failed"},
		{name: "a success seen before counts once more only if later",
			status: statusWith(lastSuccess("2026-03-02T11:00:00Z")), jobs: []*batchv1.Job{job("a", completedAt("2026-03-02T10:05:00Z")), job("b", completedAt("2026-03-02T12:05:00Z"))},
			wantLastSuccessful: "2026-03-02T12:05:00Z"},
		{name: "lastSuccessfulTime never goes back",
			status: statusWith(lastSuccess("2026-03-02T11:00:00Z")), jobs: []*batchv1.Job{job("a", completedAt("2026-03-02T10:05:00Z"))},
			wantLastSuccessful: "2026-03-02T11:00:00Z"},
		{name: "an unfinished Job not listed is unexpected",
			status: statusWith(active("a")), jobs: []*batchv1.Job{job("a"), job("x")},
			wantActive: []string{"a"}, wantUnexpected: []string{"x"}},
		{name: "a listed Job not seen is missing",
			status: statusWith(active("a", "gone")), jobs: []*batchv1.Job{job("a")},
			wantActive: []string{"a", "gone"}, wantMissing: []string{"gone"}},
		{name: "a finished Job leaves before missing ones are counted",
			status: statusWith(active("a")), jobs: []*batchv1.Job{job("a", failedJob)},
			wantEvents: []string{"SawCompletedJob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.status.DeepCopy()
			acc := accountJobs(st, tt.jobs)
			var gotActive []string
			for _, r := range st.Active {
				gotActive = append(gotActive, r.Name)
			}
			if !slices.Equal(gotActive, tt.wantActive) {
				t.Errorf("active = %v, want %v", gotActive, tt.wantActive)
			}
			switch {
			case tt.wantLastSuccessful == "" && st.LastSuccessfulTime != nil:
				t.Errorf("lastSuccessfulTime = %v, want none", st.LastSuccessfulTime)
			case tt.wantLastSuccessful != "" && (st.LastSuccessfulTime == nil || !st.LastSuccessfulTime.Time.Equal(at(tt.wantLastSuccessful))):
				t.Errorf("lastSuccessfulTime = %v, want %s", st.LastSuccessfulTime, tt.wantLastSuccessful)
			}
			if got := reasons(acc.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %v, want %v", got, tt.wantEvents)
			}
			if tt.wantNote != "" && acc.Events[0].Note != tt.wantNote {
				t.Errorf("note = %q, want %q", acc.Events[0].Note, tt.wantNote)
			}
			var unexpected, missing []string
			for _, j := range acc.Unexpected {
				unexpected = append(unexpected, j.Name)
			}
			for _, r := range acc.Missing {
				missing = append(missing, r.Name)
			}
			if !slices.Equal(unexpected, tt.wantUnexpected) || !slices.Equal(missing, tt.wantMissing) {
				t.Errorf("unexpected %v, missing %v; want %v, %v", unexpected, missing, tt.wantUnexpected, tt.wantMissing)
			}
		})
	}
}

func statusWith(mods ...func(*batchv1.CronJob)) batchv1.CronJobStatus {
	cj := cronJob("* * * * *", "2026-03-01T00:00:00Z", mods...)
	return cj.Status
}

func lastSuccess(s string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Status.LastSuccessfulTime = &metav1.Time{Time: at(s)} }
}

func TestHistoryToDelete(t *testing.T) {
	jobs := []*batchv1.Job{
		job("ok-3", started("2026-03-02T03:00:00Z"), completedAt("2026-03-02T03:01:00Z")),
		job("ok-1", started("2026-03-02T01:00:00Z"), completedAt("2026-03-02T01:01:00Z")),
		job("ok-never-started", completedAt("2026-03-02T01:01:00Z")),
		job("ok-2b", started("2026-03-02T02:00:00Z"), completedAt("2026-03-02T02:01:00Z")),
		job("ok-2a", started("2026-03-02T02:00:00Z"), completedAt("2026-03-02T02:01:00Z")),
		job("failed-2", started("2026-03-02T02:00:00Z"), failedJob),
		job("failed-1", started("2026-03-02T01:00:00Z"), failedJob),
		job("running-0", started("2026-03-02T00:00:00Z")),
		job("failing-0", started("2026-03-02T00:00:00Z"), failureTargetOnly),
	}
	tests := []struct {
		name              string
		successful, fails *int32
		want              []string
	}{
		{name: "no limits: keep all"},
		{name: "defaults 3 and 1", successful: new(int32(3)), fails: new(int32(1)), want: []string{"ok-1", "ok-2a", "failed-1"}},
		{name: "zero keeps none finished", successful: new(int32(0)), fails: new(int32(0)),
			want: []string{"ok-1", "ok-2a", "ok-2b", "ok-3", "ok-never-started", "failed-1", "failed-2"}},
		{name: "only the failed limit", fails: new(int32(1)), want: []string{"failed-1"}},
		{name: "limits above the count", successful: new(int32(10)), fails: new(int32(10))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &batchv1.CronJobSpec{SuccessfulJobsHistoryLimit: tt.successful, FailedJobsHistoryLimit: tt.fails}
			var got []string
			for _, j := range historyToDelete(spec, slices.Clone(jobs)) {
				got = append(got, j.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("deletes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJobFromTemplate(t *testing.T) {
	cj := cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Asia/Tokyo"))
	cj.Spec.JobTemplate = batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "y"}, Finalizers: []string{"not/copied"}},
		Spec:       batchv1.JobSpec{BackoffLimit: new(int32(2))},
	}
	j, err := jobFromTemplate(cj, at("2026-03-03T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "cj-29541600" || j.Namespace != "ns" {
		t.Errorf("job %s/%s, want ns/cj-29541600", j.Namespace, j.Name)
	}
	if got := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-03T09:00:00+09:00" {
		t.Errorf("scheduled-timestamp = %q, want the time in Tokyo", got)
	}
	if j.Annotations["note"] != "y" || j.Labels["app"] != "x" || len(j.Finalizers) != 0 {
		t.Errorf("metadata = %+v, want the template's labels and annotations only", j.ObjectMeta)
	}
	if !metav1.IsControlledBy(j, cj) || j.OwnerReferences[0].Kind != "CronJob" || j.OwnerReferences[0].APIVersion != "batch/v1" || !*j.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("ownerReferences = %+v, want the CronJob as controller", j.OwnerReferences)
	}
	if *j.Spec.BackoffLimit != 2 {
		t.Error("spec not copied from the template")
	}
	// The Job must not share maps with the CronJob.
	j.Labels["app"] = "changed"
	if cj.Spec.JobTemplate.Labels["app"] != "x" {
		t.Error("labels shared with the template")
	}

	utc, err := jobFromTemplate(cronJob("0 9 * * *", "2026-03-02T00:30:00Z"), at("2026-03-03T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if got := utc.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-03T00:00:00Z" {
		t.Errorf("scheduled-timestamp without timeZone = %q, want UTC", got)
	}
}
