package cronjob

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func atPtr(s string) *time.Time { return new(at(s)) }

// cronJob is a CronJob created at created, changed by mods.
func cronJob(schedule, created string, mods ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cj", UID: "cj-uid", CreationTimestamp: metav1.NewTime(at(created))},
		Spec:       batchv1.CronJobSpec{Schedule: schedule, ConcurrencyPolicy: batchv1.AllowConcurrent},
	}
	for _, m := range mods {
		m(cj)
	}
	return cj
}

func lastScheduled(s string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = &metav1.Time{Time: at(s)} }
}

func deadline(seconds int64) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = &seconds }
}

func timeZone(tz string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Spec.TimeZone = &tz }
}

func TestScheduleSpecAndParse(t *testing.T) {
	tests := []struct {
		name     string
		cj       *batchv1.CronJob
		wantSpec string
		wantErr  string
	}{
		{name: "standard", cj: cronJob("*/5 * * * *", "2026-03-02T10:00:00Z"), wantSpec: "*/5 * * * *"},
		{name: "descriptor", cj: cronJob("@hourly", "2026-03-02T10:00:00Z"), wantSpec: "@hourly"},
		{name: "every", cj: cronJob("@every 90m", "2026-03-02T10:00:00Z"), wantSpec: "@every 90m"},
		{name: "timeZone prefixes TZ=", cj: cronJob("0 9 * * *", "2026-03-02T10:00:00Z", timeZone("Asia/Tokyo")), wantSpec: "TZ=Asia/Tokyo 0 9 * * *"},
		{name: "unknown timeZone is left out", cj: cronJob("0 9 * * *", "2026-03-02T10:00:00Z", timeZone("Mars/Olympus")), wantSpec: "0 9 * * *"},
		{name: "TZ in schedule wins over timeZone", cj: cronJob("CRON_TZ=Europe/Paris 0 9 * * *", "2026-03-02T10:00:00Z", timeZone("Asia/Tokyo")), wantSpec: "CRON_TZ=Europe/Paris 0 9 * * *"},
		{name: "six fields are not standard", cj: cronJob("0 0 9 * * *", "2026-03-02T10:00:00Z"), wantSpec: "0 0 9 * * *", wantErr: "expected exactly 5 fields"},
		{name: "garbage", cj: cronJob("every day", "2026-03-02T10:00:00Z"), wantSpec: "every day", wantErr: "expected exactly 5 fields"},
		{name: "unknown zone in schedule", cj: cronJob("TZ=Mars/Olympus 0 9 * * *", "2026-03-02T10:00:00Z"), wantSpec: "TZ=Mars/Olympus 0 9 * * *", wantErr: "provided bad location"},
		// The parser panics on these; upstream recovers.
		{name: "TZ= alone panics, recovered", cj: cronJob("TZ=", "2026-03-02T10:00:00Z"), wantSpec: "TZ=", wantErr: "invalid schedule format"},
		{name: "CRON_TZ without schedule panics, recovered", cj: cronJob("CRON_TZ=UTC", "2026-03-02T10:00:00Z"), wantSpec: "CRON_TZ=UTC", wantErr: "invalid schedule format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := scheduleSpec(tt.cj)
			if spec != tt.wantSpec {
				t.Errorf("scheduleSpec = %q, want %q", spec, tt.wantSpec)
			}
			sched, err := parseSchedule(spec)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("parseSchedule: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("parseSchedule error = %v, want one containing %q", err, tt.wantErr)
			case tt.wantErr == "" && sched == nil:
				t.Error("no schedule")
			}
		})
	}
}

func TestMostRecentScheduleTime(t *testing.T) {
	tests := []struct {
		name         string
		cj           *batchv1.CronJob
		now          string
		withDeadline bool
		wantEarliest string
		wantRecent   *time.Time
		wantMissed   missedSchedules
		wantErr      bool
	}{
		{name: "before the first time", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T09:59:59Z",
			wantEarliest: "2026-03-02T09:50:00Z"},
		{name: "exactly at the first time", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T10:00:00Z",
			wantEarliest: "2026-03-02T09:50:00Z", wantRecent: atPtr("2026-03-02T10:00:00Z")},
		{name: "during the first interval", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T10:30:00Z",
			wantEarliest: "2026-03-02T09:50:00Z", wantRecent: atPtr("2026-03-02T10:00:00Z")},
		{name: "three missed: the latest one", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T12:30:00Z",
			wantEarliest: "2026-03-02T09:50:00Z", wantRecent: atPtr("2026-03-02T12:00:00Z"), wantMissed: fewMissed},
		{name: "counts from lastScheduleTime, not creation", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z")), now: "2026-03-02T10:30:00Z",
			wantEarliest: "2026-03-02T10:00:00Z"},
		{name: "next after lastScheduleTime", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z")), now: "2026-03-02T11:00:05Z",
			wantEarliest: "2026-03-02T10:00:00Z", wantRecent: atPtr("2026-03-02T11:00:00Z")},
		{name: "deadline hides missed times", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), deadline(600)), now: "2026-03-02T12:30:00Z", withDeadline: true,
			wantEarliest: "2026-03-02T12:20:00Z"},
		{name: "deadline ignored when not asked", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), deadline(600)), now: "2026-03-02T12:30:00Z",
			wantEarliest: "2026-03-02T10:00:00Z", wantRecent: atPtr("2026-03-02T12:00:00Z"), wantMissed: fewMissed},
		{name: "within the deadline", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), deadline(600)), now: "2026-03-02T12:05:00Z", withDeadline: true,
			wantEarliest: "2026-03-02T11:55:00Z", wantRecent: atPtr("2026-03-02T12:00:00Z")},
		{name: "deadline before lastScheduleTime changes nothing", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T12:00:00Z"), deadline(3600)), now: "2026-03-02T12:30:00Z", withDeadline: true,
			wantEarliest: "2026-03-02T12:00:00Z"},
		{name: "more than 100 missed", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-07T10:30:00Z",
			wantEarliest: "2026-03-02T09:50:00Z", wantRecent: atPtr("2026-03-07T10:00:00Z"), wantMissed: manyMissed},
		{name: "exactly 100 missed is few", cj: cronJob("* * * * *", "2026-03-02T09:59:30Z"), now: "2026-03-02T11:39:30Z",
			wantEarliest: "2026-03-02T09:59:30Z", wantRecent: atPtr("2026-03-02T11:39:00Z"), wantMissed: fewMissed},
		{name: "101 missed is many", cj: cronJob("* * * * *", "2026-03-02T09:59:30Z"), now: "2026-03-02T11:40:30Z",
			wantEarliest: "2026-03-02T09:59:30Z", wantRecent: atPtr("2026-03-02T11:40:00Z"), wantMissed: manyMissed},
		{name: "years of missed minutes stay cheap", cj: cronJob("* * * * *", "2016-03-02T09:59:30Z"), now: "2026-03-02T11:40:30Z",
			wantEarliest: "2016-03-02T09:59:30Z", wantRecent: atPtr("2026-03-02T11:40:00Z"), wantMissed: manyMissed},
		{name: "irregular schedule over a weekend", cj: cronJob("30 6-16/4 * * 1-5", "2026-03-06T15:00:00Z"), now: "2026-03-09T11:00:00Z",
			wantEarliest: "2026-03-06T15:00:00Z", wantRecent: atPtr("2026-03-09T10:30:00Z"), wantMissed: fewMissed},
		{name: "weekly, two runs missed", cj: cronJob("0 8 * * 1", "2026-02-20T00:00:00Z", lastScheduled("2026-02-23T08:00:00Z")), now: "2026-03-10T00:00:00Z",
			wantEarliest: "2026-02-23T08:00:00Z", wantRecent: atPtr("2026-03-09T08:00:00Z"), wantMissed: fewMissed},
		{name: "@every counts from creation", cj: cronJob("@every 1h", "2026-03-02T09:50:00Z"), now: "2026-03-02T13:00:00Z",
			wantEarliest: "2026-03-02T09:50:00Z", wantRecent: atPtr("2026-03-02T12:50:00Z"), wantMissed: fewMissed},
		{name: "30 February never fires", cj: cronJob("59 23 30 2 *", "2026-03-02T09:50:00Z"), now: "2026-03-02T13:00:00Z",
			wantEarliest: "2026-03-02T09:50:00Z", wantErr: true},
		{name: "time zone: 09:00 in Tokyo is midnight UTC", cj: cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Asia/Tokyo")), now: "2026-03-03T00:00:30Z",
			wantEarliest: "2026-03-02T00:30:00Z", wantRecent: atPtr("2026-03-03T00:00:00Z")},
		{name: "time zone: not yet 09:00 in Tokyo", cj: cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Asia/Tokyo")), now: "2026-03-02T09:00:00Z",
			wantEarliest: "2026-03-02T00:30:00Z"},
		{name: "TZ in the schedule", cj: cronJob("CRON_TZ=Asia/Tokyo 0 9 * * *", "2026-03-02T00:30:00Z"), now: "2026-03-03T00:00:30Z",
			wantEarliest: "2026-03-02T00:30:00Z", wantRecent: atPtr("2026-03-03T00:00:00Z")},
		// New York springs forward on 8 March 2026 at 02:00: 02:30 does not exist that day
		// and, as with upstream's parser, that day's run is skipped.
		{name: "DST spring forward skips the nonexistent time", cj: cronJob("30 2 * * *", "2026-03-07T12:00:00Z", timeZone("America/New_York")), now: "2026-03-09T06:00:00Z",
			wantEarliest: "2026-03-07T12:00:00Z"},
		{name: "DST spring forward: next day as usual", cj: cronJob("30 2 * * *", "2026-03-07T12:00:00Z", timeZone("America/New_York")), now: "2026-03-09T06:30:00Z",
			wantEarliest: "2026-03-07T12:00:00Z", wantRecent: atPtr("2026-03-09T06:30:00Z")},
		// It falls back on 1 November 2026: 01:30 happens twice, and so does the run.
		{name: "DST fall back: first 01:30 (EDT)", cj: cronJob("30 1 * * *", "2026-10-31T12:00:00Z", timeZone("America/New_York")), now: "2026-11-01T05:45:00Z",
			wantEarliest: "2026-10-31T12:00:00Z", wantRecent: atPtr("2026-11-01T05:30:00Z")},
		{name: "DST fall back: second 01:30 (EST)", cj: cronJob("30 1 * * *", "2026-10-31T12:00:00Z", timeZone("America/New_York"), lastScheduled("2026-11-01T05:30:00Z")), now: "2026-11-01T06:45:00Z",
			wantEarliest: "2026-11-01T05:30:00Z", wantRecent: atPtr("2026-11-01T06:30:00Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched, err := parseSchedule(scheduleSpec(tt.cj))
			if err != nil {
				t.Fatal(err)
			}
			earliest, recent, missed, err := mostRecentScheduleTime(tt.cj, at(tt.now), sched, tt.withDeadline)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !earliest.Equal(at(tt.wantEarliest)) {
				t.Errorf("earliest = %v, want %v", earliest.UTC(), tt.wantEarliest)
			}
			if !ptr.Equal(recent, tt.wantRecent) && (recent == nil || tt.wantRecent == nil || !recent.Equal(*tt.wantRecent)) {
				t.Errorf("most recent = %v, want %v", recent, tt.wantRecent)
			}
			if missed != tt.wantMissed {
				t.Errorf("missed = %v, want %v", missed, tt.wantMissed)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	tests := []struct {
		name string
		cj   *batchv1.CronJob
		now  string
		want time.Duration
	}{
		{name: "next time from creation", cj: cronJob("0 * * * *", "2026-03-02T09:50:00Z"), now: "2026-03-02T09:55:00Z",
			want: 5*time.Minute + nextScheduleDelta},
		{name: "next time after the last run", cj: cronJob("*/15 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z")), now: "2026-03-02T10:01:00Z",
			want: 14*time.Minute + nextScheduleDelta},
		{name: "the due time not run yet: the one after it", cj: cronJob("*/15 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z")), now: "2026-03-02T10:16:00Z",
			want: 14*time.Minute + nextScheduleDelta},
		{name: "many missed: after the most recent", cj: cronJob("0 * * * *", "2026-01-01T00:00:00Z"), now: "2026-03-02T10:20:00Z",
			want: 40*time.Minute + nextScheduleDelta},
		{name: "deadline does not delay the wake-up", cj: cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T09:00:00Z"), deadline(10)), now: "2026-03-02T10:20:00Z",
			want: 40*time.Minute + nextScheduleDelta},
		{name: "in the time zone", cj: cronJob("0 9 * * *", "2026-03-02T00:30:00Z", timeZone("Asia/Tokyo")), now: "2026-03-02T23:00:00Z",
			want: time.Hour + nextScheduleDelta},
		{name: "across spring forward: a day of 23 hours", cj: cronJob("0 3 * * *", "2026-03-07T08:00:00Z", timeZone("America/New_York"), lastScheduled("2026-03-07T08:00:00Z")), now: "2026-03-07T09:00:00Z",
			want: 22*time.Hour + nextScheduleDelta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched, err := parseSchedule(scheduleSpec(tt.cj))
			if err != nil {
				t.Fatal(err)
			}
			if got := requeueAfter(tt.cj, at(tt.now), sched); got != tt.want {
				t.Errorf("requeueAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJobName(t *testing.T) {
	cj := cronJob("* * * * *", "2026-03-02T09:50:00Z")
	// 2026-03-02T10:00:00Z is 1772445600 seconds after the epoch.
	if got, want := jobName(cj, at("2026-03-02T10:00:00Z")), "cj-29540760"; got != want {
		t.Errorf("jobName = %q, want %q", got, want)
	}
	if jobName(cj, at("2026-03-02T10:00:59Z")) != jobName(cj, at("2026-03-02T10:00:00Z")) {
		t.Error("two times in one minute must give one name")
	}
}
