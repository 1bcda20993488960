package cronjob

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// Schedule arithmetic: pure functions of a CronJob, its parsed schedule and the time now.

// nextScheduleDelta pads every wake-up a little past the schedule time, as upstream does, so
// that small clock differences never wake the controller just before a run is due.
const nextScheduleDelta = 100 * time.Millisecond

// maxMissedSchedules is how many missed start times the controller accepts before it warns
// (TooManyMissedTimes) instead of catching up on them.
const maxMissedSchedules = 100

type missedSchedules int

const (
	noneMissed missedSchedules = iota
	fewMissed
	manyMissed
)

func (m missedSchedules) String() string {
	switch m {
	case noneMissed:
		return "none"
	case fewMissed:
		return "few"
	case manyMissed:
		return "many"
	}
	return fmt.Sprintf("unknown(%d)", int(m))
}

// tzInSchedule reports whether the schedule names its own time zone (TZ= or CRON_TZ=): the
// API server rejects that for new objects, older objects may still have it, and upstream
// honours it with an UnsupportedSchedule warning.
func tzInSchedule(cj *batchv1.CronJob) bool {
	return strings.Contains(cj.Spec.Schedule, "TZ")
}

// scheduleSpec is the text handed to the cron parser: the schedule itself when it names its
// time zone or when spec.timeZone is unset or unknown, else prefixed with "TZ=<timeZone>".
func scheduleSpec(cj *batchv1.CronJob) string {
	if tzInSchedule(cj) || cj.Spec.TimeZone == nil {
		return cj.Spec.Schedule
	}
	if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
		return cj.Spec.Schedule
	}
	return "TZ=" + *cj.Spec.TimeZone + " " + cj.Spec.Schedule
}

// parseSchedule parses a schedule in the standard five-field syntax (plus descriptors such as
// @hourly and @every), turning the parser's panics on malformed input into errors.
func parseSchedule(spec string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(spec)
}

// location is the CronJob's time zone: spec.timeZone, or UTC when unset.
func location(cj *batchv1.CronJob) (*time.Location, error) {
	if cj.Spec.TimeZone == nil {
		return time.UTC, nil
	}
	return time.LoadLocation(*cj.Spec.TimeZone)
}

// mostRecentScheduleTime finds the latest schedule time not after now that the CronJob has
// not run yet. It returns the time it counts from (the last schedule time, else the creation
// time, moved up to now-startingDeadlineSeconds when withDeadline), that most recent time
// (nil when none is due), how many were missed, and an error for schedules that never fire
// (e.g. 30 February).
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, withDeadline bool) (time.Time, *time.Time, missedSchedules, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		// Nothing before the deadline will be started any more.
		if deadline := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}

	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	if now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	if now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}

	// A schedule that never fires gives zero times, hence no interval.
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return earliest, nil, noneMissed, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	// Estimate the number of missed times from the first interval, then let the parser walk
	// only the last stretch: a controller stopped for years must not iterate over every
	// minute since. Starting one interval early keeps irregular schedules (30 6-16/4 * * 1-5)
	// and @every exact.
	missed := int64(now.Sub(t1).Seconds())/interval + 1
	var mostRecent time.Time
	for t := sched.Next(t1.Add(time.Duration((missed-2)*interval) * time.Second)); !t.After(now); t = sched.Next(t) {
		mostRecent = t
	}

	kind := fewMissed
	if missed > maxMissedSchedules {
		kind = manyMissed
	}
	if mostRecent.IsZero() {
		return earliest, nil, kind, nil
	}
	return earliest, &mostRecent, kind, nil
}

// nextScheduleTime is the schedule time to start now, nil when none is due, with how many
// were missed; the starting deadline is taken into account.
func nextScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) (*time.Time, missedSchedules, error) {
	_, mostRecent, missed, err := mostRecentScheduleTime(cj, now, sched, true)
	if mostRecent == nil || mostRecent.After(now) {
		return nil, missed, err
	}
	return mostRecent, missed, err
}

// requeueAfter is how long to wait until the next schedule time after the one the CronJob
// last ran (or now, when times were missed or the schedule is broken), padded by
// nextScheduleDelta.
func requeueAfter(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Duration {
	earliest, mostRecent, missed, err := mostRecentScheduleTime(cj, now, sched, false)
	from := now
	switch {
	case err != nil:
	case mostRecent != nil:
		from = *mostRecent
	case missed == noneMissed:
		from = earliest
	}
	return sched.Next(from).Add(nextScheduleDelta).Sub(now)
}

// jobName is the name of the Job for one schedule time: the CronJob's name and the time in
// minutes since the epoch, so that a time is never run twice.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
