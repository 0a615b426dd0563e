package main

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// describeBatch writes kubectl describe's view of a Job or CronJob.
func describeBatch(d describer, detail agentapi.WorkloadDetail, now time.Time) {
	if detail.Job != nil {
		describeJob(d, detail)
		return
	}
	if detail.CronJob != nil {
		describeCronJob(d, detail, now)
	}
}

func optional[T any](p *T) string {
	if p == nil {
		return "<unset>"
	}
	return fmt.Sprint(*p)
}

func describeJob(d describer, detail agentapi.WorkloadDetail) {
	j := detail.Job
	describeMeta(d, &j.ObjectMeta, j.Spec.Selector)
	d.line(0, "Parallelism", "%s", optional(j.Spec.Parallelism))
	d.line(0, "Completions", "%s", optional(j.Spec.Completions))
	d.line(0, "Completion Mode", "%s", optional(j.Spec.CompletionMode))
	d.line(0, "Suspend", "%s", optional(j.Spec.Suspend))
	d.line(0, "Backoff Limit", "%s", optional(j.Spec.BackoffLimit))
	if j.Spec.BackoffLimitPerIndex != nil {
		d.line(0, "Backoff Limit Per Index", "%d", *j.Spec.BackoffLimitPerIndex)
	}
	if j.Spec.MaxFailedIndexes != nil {
		d.line(0, "Max Failed Indexes", "%d", *j.Spec.MaxFailedIndexes)
	}
	if j.Spec.TTLSecondsAfterFinished != nil {
		d.line(0, "TTL Seconds After Finished", "%d", *j.Spec.TTLSecondsAfterFinished)
	}
	if s := j.Status.StartTime; s != nil {
		d.line(0, "Start Time", "%s", s.Format(time.RFC1123Z))
		if c := j.Status.CompletionTime; c != nil {
			d.line(0, "Completed At", "%s", c.Format(time.RFC1123Z))
			d.line(0, "Duration", "%s", duration.HumanDuration(c.Sub(s.Time)))
		}
	}
	if j.Spec.ActiveDeadlineSeconds != nil {
		d.line(0, "Active Deadline Seconds", "%ds", *j.Spec.ActiveDeadlineSeconds)
	}
	ready := int32(0)
	if j.Status.Ready != nil {
		ready = *j.Status.Ready
	}
	d.line(0, "Pods Statuses", "%d Active (%d Ready) / %d Succeeded / %d Failed", j.Status.Active, ready, j.Status.Succeeded, j.Status.Failed)
	if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == "Indexed" {
		d.line(0, "Completed Indexes", "%s", orNone(j.Status.CompletedIndexes))
	}
	if j.Status.FailedIndexes != nil {
		d.line(0, "Failed Indexes", "%s", orNone(*j.Status.FailedIndexes))
	}
	describeTemplate(d, &j.Spec.Template)
	if len(j.Status.Conditions) > 0 {
		d.heading(0, "Conditions")
		fmt.Fprintf(d.tw, "  Type\tStatus\tReason\tMessage\n  ----\t------\t------\t-------\n")
		for _, c := range j.Status.Conditions {
			fmt.Fprintf(d.tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	var pods []string
	for _, p := range detail.Pods {
		pods = append(pods, fmt.Sprintf("%s (%s)", p.Name, podPhase(&p)))
	}
	d.line(0, "Pods", "%s", orNone(strings.Join(pods, "\n\t")))
}

func podPhase(p *v1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	return string(p.Status.Phase)
}

func describeCronJob(d describer, detail agentapi.WorkloadDetail, now time.Time) {
	cj := detail.CronJob
	d.line(0, "Name", "%s", cj.Name)
	d.line(0, "Namespace", "%s", cj.Namespace)
	d.line(0, "Labels", "%s", orNone(joinMap(cj.Labels, "\n\t")))
	d.line(0, "Annotations", "%s", orNone(joinMap(cj.Annotations, "\n\t")))
	d.line(0, "Schedule", "%s", cj.Spec.Schedule)
	if cj.Spec.TimeZone != nil {
		d.line(0, "Time Zone", "%s", *cj.Spec.TimeZone)
	}
	d.line(0, "Concurrency Policy", "%s", cj.Spec.ConcurrencyPolicy)
	d.line(0, "Suspend", "%s", capitalBool(cj.Spec.Suspend != nil && *cj.Spec.Suspend))
	d.line(0, "Successful Job History Limit", "%s", optional(cj.Spec.SuccessfulJobsHistoryLimit))
	d.line(0, "Failed Job History Limit", "%s", optional(cj.Spec.FailedJobsHistoryLimit))
	d.line(0, "Starting Deadline Seconds", "%s", optional(cj.Spec.StartingDeadlineSeconds))
	js := cj.Spec.JobTemplate.Spec
	d.line(0, "Parallelism", "%s", optional(js.Parallelism))
	d.line(0, "Completions", "%s", optional(js.Completions))
	d.line(0, "Active Deadline Seconds", "%s", optional(js.ActiveDeadlineSeconds))
	describeTemplate(d, &js.Template)
	last := "<unset>"
	if t := cj.Status.LastScheduleTime; t != nil {
		last = t.Format(time.RFC1123Z) + " (" + age(t.Time, now) + " ago)"
	}
	d.line(0, "Last Schedule Time", "%s", last)
	if t := cj.Status.LastSuccessfulTime; t != nil {
		d.line(0, "Last Successful Time", "%s", t.Format(time.RFC1123Z))
	}
	var active, jobs []string
	for _, r := range cj.Status.Active {
		active = append(active, r.Name)
	}
	for i := range detail.Jobs {
		jobs = append(jobs, detail.Jobs[i].Name+" ("+jobStatus(&detail.Jobs[i])+")")
	}
	d.line(0, "Active Jobs", "%s", orNone(strings.Join(active, ", ")))
	d.line(0, "Jobs", "%s", orNone(strings.Join(jobs, "\n\t")))
}
