package workload

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CronJobScheduledTimestampAnnotation is the scheduled time a CronJob's
// Job was made for (RFC 3339, in the CronJob's time zone).
const CronJobScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// CronJobActions is what a CronJob's reconcile asks for.
type CronJobActions struct {
	// Create is a new Job for a scheduled time (no UID yet); its name,
	// "<cronjob>-<minutes since the epoch>", is the run's identity.
	Create *batchv1.Job
	// Delete names Jobs to delete (Replace, history limits).
	Delete []string
	Status batchv1.CronJobStatus
	Events []Event
	// Requeue is the next scheduled time (zero: none).
	Requeue time.Time
}

// CronJobJobName is the name of a CronJob's Job for a scheduled time.
func CronJobJobName(cronJob string, scheduled time.Time) string {
	return cronJob + "-" + strconv.FormatInt(scheduled.Unix()/60, 10)
}

// ReconcileCronJob starts the CronJob's Jobs as the cronjob controller
// does, given the Jobs it owns (not being deleted): its status follows
// them; unless suspended, the most recent start time due (within
// startingDeadlineSeconds, and not yet started: the Job's name is its
// identity) gets a Job, under the concurrencyPolicy; finished Jobs beyond
// the history limits are deleted, oldest first.
func ReconcileCronJob(cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) CronJobActions {
	var a CronJobActions
	a.Status = *cj.Status.DeepCopy()
	a.Status.Active = nil
	var active []*batchv1.Job
	for _, j := range jobs {
		finished, how := JobFinished(j)
		switch {
		case !finished:
			active = append(active, j)
			a.Status.Active = append(a.Status.Active, jobRef(j))
		case wasActive(cj, j):
			a.Events = append(a.Events, Event{Reason: "SawCompletedJob", Message: fmt.Sprintf("Saw completed job: %s, condition: %s", j.Name, how)})
		}
		if how == batchv1.JobComplete && j.Status.CompletionTime != nil && (a.Status.LastSuccessfulTime == nil || a.Status.LastSuccessfulTime.Before(j.Status.CompletionTime)) {
			t := *j.Status.CompletionTime
			a.Status.LastSuccessfulTime = &t
		}
	}
	a.Delete = historyBeyondLimits(cj, jobs)
	for _, name := range a.Delete {
		a.Events = append(a.Events, Event{Reason: "SuccessfulDelete", Message: "Deleted job " + name})
	}
	if cj.DeletionTimestamp != nil {
		return a
	}
	sched, err := ParseSchedule(cj.Spec.Schedule, cj.Spec.TimeZone)
	if err != nil {
		a.Events = append(a.Events, Event{Reason: "UnparseableSchedule", Message: err.Error(), Warning: true})
		return a
	}
	a.Requeue = sched.Next(now)
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return a
	}
	startDue(cj, &a, sched.Next, active, jobs, now)
	return a
}

// startDue makes the Job of the most recent start time due, if any.
func startDue(cj *batchv1.CronJob, a *CronJobActions, next func(time.Time) time.Time, active, jobs []*batchv1.Job, now time.Time) {
	scheduled, err := dueTime(cj, a, next, now)
	if err != nil || scheduled == nil {
		return
	}
	name := CronJobJobName(cj.Name, *scheduled)
	for _, j := range jobs {
		if j.Name == name {
			return // started already
		}
	}
	if cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled) {
		return
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(active) > 0 {
			a.Events = append(a.Events, Event{Reason: "JobAlreadyActive", Message: "Not starting job because prior execution is running and concurrency policy is Forbid"})
			return
		}
	case batchv1.ReplaceConcurrent:
		for _, j := range active {
			a.Delete = append(a.Delete, j.Name)
			a.Events = append(a.Events, Event{Reason: "SuccessfulDelete", Message: "Deleted job " + j.Name})
		}
		a.Status.Active = nil
	}
	a.Create = jobFromTemplate(cj, *scheduled)
	a.Events = append(a.Events, Event{Reason: "SuccessfulCreate", Message: "Created job " + name})
	a.Status.Active = append(a.Status.Active, jobRef(a.Create))
	t := metav1.NewTime(*scheduled)
	a.Status.LastScheduleTime = &t
}

// dueTime is the start time due now, or nil; it warns of many missed
// times and of a start time past its startingDeadlineSeconds.
func dueTime(cj *batchv1.CronJob, a *CronJobActions, next func(time.Time) time.Time, now time.Time) (*time.Time, error) {
	scheduled, missed, err := mostRecentScheduleTime(cj, scheduleFunc(next), now)
	if err != nil {
		a.Events = append(a.Events, Event{Reason: "InvalidSchedule", Message: "invalid schedule: " + cj.Spec.Schedule + " : " + err.Error(), Warning: true})
		return nil, err
	}
	if missed > tooManyMissed {
		a.Events = append(a.Events, Event{Reason: "TooManyMissedTimes", Message: "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew", Warning: true})
	}
	if scheduled == nil {
		return nil, nil
	}
	if s := cj.Spec.StartingDeadlineSeconds; s != nil && scheduled.Add(time.Duration(*s)*time.Second).Before(now) {
		a.Events = append(a.Events, Event{Reason: "MissSchedule", Message: "Missed scheduled time to start a job: " + scheduled.UTC().Format(time.RFC1123Z), Warning: true})
		return nil, nil
	}
	return scheduled, nil
}

// scheduleFunc adapts a Next function to cron.Schedule.
type scheduleFunc func(time.Time) time.Time

func (f scheduleFunc) Next(t time.Time) time.Time { return f(t) }

// jobFromTemplate is the Job of a scheduled time, as the controller makes
// it from the jobTemplate.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) *batchv1.Job {
	t := cj.Spec.JobTemplate
	annotations := maps.Clone(t.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	when := scheduled
	if cj.Spec.TimeZone != nil {
		if loc, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			when = scheduled.In(loc)
		}
	}
	annotations[CronJobScheduledTimestampAnnotation] = when.Format(time.RFC3339)
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: CronJobJobName(cj.Name, scheduled), Namespace: cj.Namespace,
			Labels: maps.Clone(t.Labels), Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}

func jobRef(j *batchv1.Job) v1.ObjectReference {
	return v1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, APIVersion: "batch/v1"}
}

// wasActive says whether the CronJob's status listed j as active.
func wasActive(cj *batchv1.CronJob, j *batchv1.Job) bool {
	for _, r := range cj.Status.Active {
		if r.Name == j.Name {
			return true
		}
	}
	return false
}

// historyBeyondLimits names the finished Jobs beyond
// successfulJobsHistoryLimit and failedJobsHistoryLimit, oldest first.
func historyBeyondLimits(cj *batchv1.CronJob, jobs []*batchv1.Job) []string {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch _, how := JobFinished(j); how {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	out := oldestBeyond(succeeded, cj.Spec.SuccessfulJobsHistoryLimit)
	return append(out, oldestBeyond(failed, cj.Spec.FailedJobsHistoryLimit)...)
}

func oldestBeyond(jobs []*batchv1.Job, limit *int32) []string {
	if limit == nil || len(jobs) <= int(*limit) {
		return nil
	}
	sort.SliceStable(jobs, func(i, j int) bool {
		x, y := jobs[i].Status.StartTime, jobs[j].Status.StartTime
		switch {
		case x == nil || y == nil:
			return x != nil
		case !x.Equal(y):
			return x.Before(y)
		}
		return jobs[i].Name < jobs[j].Name
	})
	var out []string
	for _, j := range jobs[:len(jobs)-int(*limit)] {
		out = append(out, j.Name)
	}
	return out
}
