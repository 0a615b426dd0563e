package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// cronSim runs a CronJob's controller against a fake clock; its Jobs
// finish (succeed, or fail when fail says so) runFor after they start.
type cronSim struct {
	t      *testing.T
	cj     *batchv1.CronJob
	jobs   []*batchv1.Job
	now    time.Time
	runFor time.Duration
	fail   bool
	events []Event
	made   []string
}

func newCronSim(t *testing.T, schedule string, created time.Time) *cronSim {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "cj-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule, ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr.To(false),
			SuccessfulJobsHistoryLimit: ptr.To(int32(3)), FailedJobsHistoryLimit: ptr.To(int32(1)),
		},
	}
	return &cronSim{t: t, cj: cj, now: created, runFor: 10 * time.Second}
}

// step reconciles once at the current time and applies the actions.
func (s *cronSim) step() CronJobActions {
	for _, j := range s.jobs {
		if finished, _ := JobFinished(j); !finished && !s.now.Before(j.Status.StartTime.Add(s.runFor)) {
			typ := batchv1.JobComplete
			if s.fail {
				typ = batchv1.JobFailed
			}
			ts := metav1.NewTime(j.Status.StartTime.Add(s.runFor))
			j.Status.Conditions = []batchv1.JobCondition{{Type: typ, Status: v1.ConditionTrue, LastTransitionTime: ts}}
			if typ == batchv1.JobComplete {
				j.Status.CompletionTime = &ts
			}
		}
	}
	act := ReconcileCronJob(s.cj, s.jobs, s.now)
	for _, name := range act.Delete {
		s.jobs = slices.DeleteFunc(s.jobs, func(j *batchv1.Job) bool { return j.Name == name })
	}
	if act.Create != nil {
		start := metav1.NewTime(s.now)
		act.Create.Status.StartTime = &start
		s.jobs = append(s.jobs, act.Create)
		s.made = append(s.made, act.Create.Name)
	}
	s.cj.Status = act.Status
	s.events = append(s.events, act.Events...)
	return act
}

// run steps every second for d.
func (s *cronSim) run(d time.Duration) {
	for end := s.now.Add(d); s.now.Before(end); s.now = s.now.Add(time.Second) {
		s.step()
	}
}

func (s *cronSim) sawEvent(reason string) bool {
	return slices.ContainsFunc(s.events, func(e Event) bool { return e.Reason == reason })
}

var cronStart = time.Date(2026, 3, 1, 11, 59, 30, 0, time.UTC)

func TestCronJobRunsOncePerScheduledTime(t *testing.T) {
	s := newCronSim(t, "*/5 * * * *", cronStart)
	s.run(15 * time.Minute)
	want := []string{"hello-29539440", "hello-29539445", "hello-29539450"} // 12:00, 12:05, 12:10 in minutes since the epoch
	if !slices.Equal(s.made, want) {
		t.Fatalf("jobs %v, want %v", s.made, want)
	}
	j := s.jobs[0]
	if j.Annotations[CronJobScheduledTimestampAnnotation] != "2026-03-01T12:00:00Z" || j.OwnerReferences[0].Kind != "CronJob" || !*j.OwnerReferences[0].Controller {
		t.Fatalf("job metadata %+v", j.ObjectMeta)
	}
	if got := s.cj.Status.LastScheduleTime; got == nil || !got.Time.Equal(time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)) {
		t.Fatalf("lastScheduleTime %v", got)
	}
	if got := s.cj.Status.LastSuccessfulTime; got == nil || !got.Time.Equal(time.Date(2026, 3, 1, 12, 10, 10, 0, time.UTC)) {
		t.Fatalf("lastSuccessfulTime %v", got)
	}
	if len(s.cj.Status.Active) != 0 || !s.sawEvent("SawCompletedJob") {
		t.Fatalf("active %v events %v", s.cj.Status.Active, s.events)
	}
}

func TestCronJobTimeZone(t *testing.T) {
	s := newCronSim(t, "0 9 * * *", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	s.cj.Spec.TimeZone = ptr.To("Asia/Tokyo") // 09:00 JST is 00:00 UTC
	s.now = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	act := s.step()
	if act.Create == nil || act.Create.Annotations[CronJobScheduledTimestampAnnotation] != "2026-03-02T09:00:00+09:00" {
		t.Fatalf("want the 09:00 JST run at 00:00 UTC: %+v", act.Create)
	}
	if !act.Requeue.Equal(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("requeue %v", act.Requeue)
	}
	if _, zoneErr := CheckSchedule("0 9 * * *", ptr.To("Mars/Olympus")); zoneErr == nil {
		t.Fatal("an unknown zone is accepted")
	}
	if schedErr, _ := CheckSchedule("CRON_TZ=UTC 0 9 * * *", nil); schedErr == nil || !strings.Contains(schedErr.Error(), "use timeZone field instead") {
		t.Fatalf("CRON_TZ accepted: %v", schedErr)
	}
	if schedErr, _ := CheckSchedule("@hourly", nil); schedErr != nil {
		t.Fatalf("@hourly refused: %v", schedErr)
	}
	if schedErr, _ := CheckSchedule("61 * * * *", nil); schedErr == nil {
		t.Fatal("minute 61 accepted")
	}
}

func TestCronJobConcurrencyPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy     batchv1.ConcurrencyPolicy
		wantMade   int
		wantActive int
		wantEvent  string
	}{
		{batchv1.AllowConcurrent, 3, 3, "SuccessfulCreate"},
		{batchv1.ForbidConcurrent, 1, 1, "JobAlreadyActive"},
		{batchv1.ReplaceConcurrent, 3, 1, "SuccessfulDelete"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			s := newCronSim(t, "* * * * *", cronStart)
			s.cj.Spec.ConcurrencyPolicy = tc.policy
			s.runFor = time.Hour
			s.run(3 * time.Minute)
			if len(s.made) != tc.wantMade || len(s.cj.Status.Active) != tc.wantActive || !s.sawEvent(tc.wantEvent) {
				t.Fatalf("made %v active %v events %v", s.made, s.cj.Status.Active, s.events)
			}
		})
	}
}

func TestCronJobSuspend(t *testing.T) {
	s := newCronSim(t, "* * * * *", cronStart)
	s.cj.Spec.Suspend = ptr.To(true)
	s.run(3 * time.Minute)
	if len(s.made) != 0 {
		t.Fatalf("suspended CronJob made %v", s.made)
	}
	s.cj.Spec.Suspend = ptr.To(false)
	s.step()
	if !slices.Equal(s.made, []string{"hello-29539442"}) {
		t.Fatalf("resumed: made %v, want only the most recent missed time (12:02)", s.made)
	}
}

func TestCronJobMissedRunsAfterDowntime(t *testing.T) {
	s := newCronSim(t, "*/10 * * * *", cronStart)
	s.run(time.Minute) // 12:00 runs
	s.now = s.now.Add(45 * time.Minute)
	s.step() // the agent was down from 12:00:30 to 12:45:30: 12:10 .. 12:40 missed
	if !slices.Equal(s.made, []string{"hello-29539440", "hello-29539480"}) {
		t.Fatalf("made %v, want 12:00 and then only the most recent missed time 12:40", s.made)
	}
	s.step()
	s.now = s.now.Add(time.Second)
	s.step()
	if len(s.made) != 2 {
		t.Fatalf("one scheduled time ran twice: %v", s.made)
	}

	// A restart before the status was saved: the Job of that time exists, so
	// the time is not run again.
	s.cj.Status.LastScheduleTime = nil
	s.step()
	if len(s.made) != 2 {
		t.Fatalf("a Job's name did not keep its time from running twice: %v", s.made)
	}
}

func TestCronJobStartingDeadline(t *testing.T) {
	s := newCronSim(t, "*/10 * * * *", cronStart)
	s.cj.Spec.StartingDeadlineSeconds = ptr.To(int64(120))
	s.now = time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC) // down over 12:00, now 5 minutes late
	s.step()
	if len(s.made) != 0 {
		t.Fatalf("ran a time past its startingDeadlineSeconds: %v", s.made)
	}
	s.now = time.Date(2026, 3, 1, 12, 11, 0, 0, time.UTC) // 1 minute late, within 2
	s.step()
	if !slices.Equal(s.made, []string{"hello-29539450"}) {
		t.Fatalf("made %v", s.made)
	}
}

func TestCronJobTooManyMissed(t *testing.T) {
	s := newCronSim(t, "* * * * *", cronStart)
	s.now = s.now.Add(5 * time.Hour)
	s.step()
	if !s.sawEvent("TooManyMissedTimes") || len(s.made) != 1 {
		t.Fatalf("events %v made %v: want the warning and still the most recent run", s.events, s.made)
	}
}

func TestCronJobHistoryLimits(t *testing.T) {
	s := newCronSim(t, "* * * * *", cronStart)
	s.run(10 * time.Minute)
	if len(s.jobs) != 3 || s.jobs[2].Name != s.made[len(s.made)-1] {
		t.Fatalf("successful history: %d jobs kept, want the newest 3", len(s.jobs))
	}
	s = newCronSim(t, "* * * * *", cronStart)
	s.fail = true
	s.run(10 * time.Minute)
	if len(s.jobs) != 1 || s.jobs[0].Name != s.made[len(s.made)-1] {
		t.Fatalf("failed history: %d jobs kept, want the newest 1", len(s.jobs))
	}
}
