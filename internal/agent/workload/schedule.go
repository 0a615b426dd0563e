package workload

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // timeZone names resolve without the host's zoneinfo

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// ParseSchedule parses a CronJob's schedule in its time zone as the
// cronjob controller does: cron.ParseStandard (five fields, or @hourly,
// @daily, ..., @every D) of "TZ=<timeZone> <schedule>".
func ParseSchedule(schedule string, timeZone *string) (cron.Schedule, error) {
	spec := schedule
	if timeZone != nil {
		spec = "TZ=" + *timeZone + " " + schedule
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("unparseable schedule %q: %w", schedule, err)
	}
	return sched, nil
}

// CheckSchedule says what the API server finds wrong with a schedule and
// time zone: a TZ= or CRON_TZ= prefix (the timeZone field says it), an
// unknown or "Local" zone, or a schedule cron.ParseStandard refuses.
func CheckSchedule(schedule string, timeZone *string) (scheduleErr, zoneErr error) {
	if timeZone != nil {
		zoneErr = CheckTimeZone(*timeZone)
	}
	switch {
	case strings.Contains(schedule, "TZ") && timeZone != nil:
		return errors.New("cannot use both timeZone field and TZ or CRON_TZ in schedule"), zoneErr
	case strings.Contains(schedule, "TZ"):
		return errors.New("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"), zoneErr
	}
	if _, err := cron.ParseStandard(schedule); err != nil {
		return err, zoneErr
	}
	return nil, zoneErr
}

// CheckTimeZone refuses a time zone time/tzdata does not know, or Local.
func CheckTimeZone(tz string) error {
	switch {
	case tz == "":
		return errors.New("timeZone must be nil or non-empty string")
	case strings.EqualFold(tz, "Local"):
		return errors.New("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("unknown time zone %s", tz)
	}
	return nil
}

// tooManyMissed is how many missed start times the controller tolerates
// without a TooManyMissedTimes warning.
const tooManyMissed = 100

// mostRecentScheduleTime is the latest start time of the schedule due at
// now and not yet started (since the last schedule time, or creation, and
// within startingDeadlineSeconds), nil if none; and how many were missed.
func mostRecentScheduleTime(cj *batchv1.CronJob, sched cron.Schedule, now time.Time) (*time.Time, int64, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if s := cj.Spec.StartingDeadlineSeconds; s != nil {
		if deadline := now.Add(-time.Duration(*s) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	switch {
	case now.Before(t1):
		return nil, 0, nil
	case now.Before(t2):
		return &t1, 1, nil
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		return nil, 0, errors.New("time difference between two schedules is less than 1 second")
	}
	missed := int64(now.Sub(t1).Seconds())/between + 1
	recent := time.Unix(t1.Unix()+(missed-1)*between, 0).In(t1.Location())
	for t := sched.Next(recent); !t.After(now); t = sched.Next(t) { // irregular schedules
		recent = t
	}
	return &recent, missed, nil
}
