package workload

import (
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// suspendJob deletes a suspended Job's active pods and marks it
// Suspended; its start time goes, so the deadline counts from the resume.
func suspendJob(a *JobActions, c jobCounts, now time.Time) {
	for _, p := range c.activePods {
		a.Delete = append(a.Delete, p.Name)
	}
	if setJobCondition(&a.Status, batchv1.JobSuspended, v1.ConditionTrue, JobReasonSuspended, "Job suspended", now) {
		a.Events = append(a.Events, Event{Reason: "Suspended", Message: "Job suspended"})
	}
	a.Status.StartTime = nil
}

// resumeJob marks a Job that runs (again) as resumed and starts its clock.
func resumeJob(a *JobActions, now time.Time) {
	if cond := findCondition(&a.Status, batchv1.JobSuspended); cond != nil && cond.Status == v1.ConditionTrue {
		setJobCondition(&a.Status, batchv1.JobSuspended, v1.ConditionFalse, JobReasonResumed, "Job resumed", now)
		a.Events = append(a.Events, Event{Reason: "Resumed", Message: "Job resumed"})
	}
	if a.Status.StartTime == nil {
		t := metav1.NewTime(now)
		a.Status.StartTime = &t
	}
}

// failJob marks the Job's FailureTarget, deletes its active pods and, once
// none is left running, marks it Failed.
func failJob(a *JobActions, c jobCounts, reason, message string, now time.Time) JobActions {
	setJobCondition(&a.Status, batchv1.JobFailureTarget, v1.ConditionTrue, reason, message, now)
	for _, p := range c.activePods {
		a.Delete = append(a.Delete, p.Name)
	}
	if c.active == 0 && c.terminating == 0 {
		setJobCondition(&a.Status, batchv1.JobFailed, v1.ConditionTrue, reason, message, now)
		a.Events = append(a.Events, Event{Reason: reason, Message: message, Warning: true})
	}
	return *a
}

// completeJob marks the Job's SuccessCriteriaMet, deletes pods still
// running (an Indexed Job's extra ones, those a successPolicy leaves)
// and, once none is left, marks it Complete, for the same reason, with its
// completion time.
func completeJob(a *JobActions, c jobCounts, reason, message string, now time.Time) JobActions {
	setJobCondition(&a.Status, batchv1.JobSuccessCriteriaMet, v1.ConditionTrue, reason, message, now)
	for _, p := range c.activePods {
		a.Delete = append(a.Delete, p.Name)
	}
	if c.active == 0 && c.terminating == 0 {
		setJobCondition(&a.Status, batchv1.JobComplete, v1.ConditionTrue, reason, message, now)
		t := metav1.NewTime(now)
		a.Status.CompletionTime = &t
		a.Events = append(a.Events, Event{Reason: "Completed", Message: "Job completed"})
	}
	return *a
}

// scaleJob makes the pods the Job lacks (after the failure back-off) or
// deletes those beyond parallelism.
func scaleJob(job *batchv1.Job, a *JobActions, c jobCounts, pods []JobPod, now time.Time) {
	want := parallelism(job)
	switch {
	case job.Spec.Completions == nil && c.succeeded > 0:
		want = int(c.active) // a work queue: no new pods once one succeeded
	case job.Spec.Completions != nil && indexed(job):
		want = min(want, completions(job)-len(c.succeededIndexes))
	case job.Spec.Completions != nil:
		want = min(want, completions(job)-int(c.succeeded))
	}
	want = max(want, 0)
	if excess := int(c.active) - want; excess > 0 {
		for _, p := range activePodsByRank(c.activePods)[:excess] {
			a.Delete = append(a.Delete, p.Name)
		}
		return
	}
	missing := want - int(c.active)
	if onlyFailedPodsCount(job) {
		missing -= int(c.terminating) // replaced once they failed
	}
	if missing <= 0 {
		return
	}
	missing = min(missing, MaxPodCreateDeletePerSync)
	if until := backoffUntil(pods); !perIndexBackoff(job) && now.Before(until) {
		a.Requeue = earliest(a.Requeue, until)
		return
	}
	if !indexed(job) {
		for range missing {
			a.Create = append(a.Create, -1)
		}
		return
	}
	createIndexes(job, a, c, pods, missing, now)
}

// backoffUntil is when the next pod may be made: the last failure plus
// 10 s doubled for each failure since the last success, at most 6 min.
func backoffUntil(pods []JobPod) time.Time {
	finished := make([]JobPod, 0, len(pods))
	for _, p := range pods {
		if p.succeeded() || p.failed() {
			finished = append(finished, p)
		}
	}
	sort.SliceStable(finished, func(i, j int) bool { return finished[i].Finished.Before(finished[j].Finished) })
	failures := 0
	var last time.Time
	for _, p := range finished {
		if p.succeeded() {
			failures = 0
			continue
		}
		failures++
		last = p.Finished
	}
	if failures == 0 {
		return time.Time{}
	}
	return last.Add(backoffDelay(failures))
}

// backoffDelay is the wait after the given number of failures: 10 s,
// doubled for each one after the first, at most 6 minutes.
func backoffDelay(failures int) time.Duration {
	delay := JobBackoffBase
	for i := 1; i < failures && delay < JobBackoffMax; i++ {
		delay *= 2
	}
	return min(delay, JobBackoffMax)
}

// ttlExpired says whether a finished Job's ttlSecondsAfterFinished has
// passed, else when it will.
func ttlExpired(job *batchv1.Job, st *batchv1.JobStatus, now time.Time) (bool, time.Time) {
	cond := finishedCondition(st)
	if job.Spec.TTLSecondsAfterFinished == nil || cond == nil {
		return false, time.Time{}
	}
	at := cond.LastTransitionTime.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if !now.Before(at) {
		return true, time.Time{}
	}
	return false, at
}

// finishedCondition is the Job's Complete or Failed condition, or nil.
func finishedCondition(st *batchv1.JobStatus) *batchv1.JobCondition {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == v1.ConditionTrue {
			return c
		}
	}
	return nil
}

// JobFinished says whether the Job is Complete or Failed, and which.
func JobFinished(job *batchv1.Job) (finished bool, kind batchv1.JobConditionType) {
	if c := finishedCondition(&job.Status); c != nil {
		return true, c.Type
	}
	return false, ""
}

func findCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setJobCondition sets a condition, its times moved only when its status
// changes; it says whether anything changed.
func setJobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, status v1.ConditionStatus, reason, message string, now time.Time) bool {
	ts := metav1.NewTime(now)
	c := findCondition(st, t)
	if c == nil {
		st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: message, LastProbeTime: ts, LastTransitionTime: ts})
		return true
	}
	if c.Status == status && c.Reason == reason && c.Message == message {
		return false
	}
	if c.Status != status {
		c.LastTransitionTime = ts
	}
	c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, message, ts
	return true
}

// formatIndexes renders a set of indexes below n as the controller's
// completedIndexes and failedIndexes: "0-2,4,6,7" (a run of two is
// written as two indexes).
func formatIndexes(set map[int]bool, n int) string {
	var parts []string
	for i := 0; i < n; i++ {
		if !set[i] {
			continue
		}
		j := i
		for j+1 < n && set[j+1] {
			j++
		}
		switch j {
		case i:
			parts = append(parts, strconv.Itoa(i))
		case i + 1:
			parts = append(parts, strconv.Itoa(i), strconv.Itoa(j))
		default:
			parts = append(parts, strconv.Itoa(i)+"-"+strconv.Itoa(j))
		}
		i = j
	}
	return strings.Join(parts, ",")
}

// parseIndexes reads completedIndexes ("0-2,4") back, below n; what does
// not parse is left out.
func parseIndexes(s string, n int) map[int]bool {
	set := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		first, err1 := strconv.Atoi(lo)
		last, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || first < 0 {
			continue
		}
		for i := first; i <= last && i < n; i++ {
			set[i] = true
		}
	}
	return set
}

// earliest is the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
