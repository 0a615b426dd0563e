package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// batchResource maps what kubectl accepts for Jobs and CronJobs ("job",
// "jobs.batch", "cj", ...) to the agent API's resource.
func batchResource(s string) (string, bool) {
	switch strings.TrimSuffix(strings.ToLower(s), ".batch") {
	case "job", "jobs":
		return agentapi.ResourceJob, true
	case "cj", "cronjob", "cronjobs":
		return agentapi.ResourceCronJob, true
	}
	return "", false
}

// selectBatch adds list's Job or CronJob named name to out.
func selectBatch(list agentapi.WorkloadList, out *agentapi.WorkloadList, name string) bool {
	found := false
	for _, j := range list.Jobs {
		if j.Name == name {
			out.Jobs, found = append(out.Jobs, j), true
		}
	}
	for _, cj := range list.CronJobs {
		if cj.Name == name {
			out.CronJobs, found = append(out.CronJobs, cj), true
		}
	}
	return found
}

// batchObjects is the list's Jobs and CronJobs for -o json|yaml.
func batchObjects(list agentapi.WorkloadList) []any {
	var out []any
	for i := range list.Jobs {
		j := &list.Jobs[i]
		j.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
		out = append(out, j)
	}
	for i := range list.CronJobs {
		cj := &list.CronJobs[i]
		cj.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}
		out = append(out, cj)
	}
	return out
}

// writeBatchTable prints kubectl's columns: NAME STATUS COMPLETIONS
// DURATION AGE for Jobs, NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST
// SCHEDULE AGE for CronJobs; wide adds CONTAINERS IMAGES SELECTOR.
func writeBatchTable(w io.Writer, list agentapi.WorkloadList, withNamespace, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tSTATUS\tCOMPLETIONS\tDURATION\tAGE"
	if len(list.CronJobs) > 0 {
		header = "NAME\tSCHEDULE\tTIMEZONE\tSUSPEND\tACTIVE\tLAST SCHEDULE\tAGE"
	}
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tCONTAINERS\tIMAGES\tSELECTOR"
	}
	fmt.Fprintln(tw, header)
	row := func(meta *metav1.ObjectMeta, cells string, spec *v1.PodTemplateSpec, selector *metav1.LabelSelector) {
		line := meta.Name + "\t" + cells + "\t" + age(meta.CreationTimestamp.Time, now)
		if withNamespace {
			line = meta.Namespace + "\t" + line
		}
		if wide {
			line += "\t" + templateColumns(spec) + "\t" + selectorOrNone(selector)
		}
		fmt.Fprintln(tw, line)
	}
	for i := range list.Jobs {
		j := &list.Jobs[i]
		row(&j.ObjectMeta, jobStatus(j)+"\t"+jobCompletions(j)+"\t"+jobDuration(j, now), &j.Spec.Template, j.Spec.Selector)
	}
	for i := range list.CronJobs {
		cj := &list.CronJobs[i]
		last := "<none>"
		if t := cj.Status.LastScheduleTime; t != nil {
			last = age(t.Time, now)
		}
		zone := "<none>"
		if cj.Spec.TimeZone != nil {
			zone = *cj.Spec.TimeZone
		}
		suspend := cj.Spec.Suspend != nil && *cj.Spec.Suspend
		cells := fmt.Sprintf("%s\t%s\t%s\t%d\t%s", cj.Spec.Schedule, zone, capitalBool(suspend), len(cj.Status.Active), last)
		row(&cj.ObjectMeta, cells, &cj.Spec.JobTemplate.Spec.Template, cj.Spec.JobTemplate.Spec.Selector)
	}
	return tw.Flush()
}

func selectorOrNone(s *metav1.LabelSelector) string {
	if s == nil {
		return "<none>"
	}
	return metav1.FormatLabelSelector(s)
}

func capitalBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// jobStatus is kubectl's STATUS of a Job.
func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == v1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// jobCompletions is kubectl's COMPLETIONS: "1/3", or "0/1 of 4" for a
// work queue with parallelism.
func jobCompletions(j *batchv1.Job) string {
	switch {
	case j.Spec.Completions != nil:
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1:
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

// jobDuration is kubectl's DURATION: from the start to the completion, or
// to now.
func jobDuration(j *batchv1.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}

// followJob waits until a Job is Complete (nil) or Failed (an error with
// its reason), printing its progress as it changes.
func followJob(ctx context.Context, client *agentapi.Client, namespace, name string, out io.Writer) error {
	last := ""
	for {
		detail, err := client.DescribeWorkload(ctx, agentapi.ResourceJob, namespace, name)
		if err != nil {
			return err
		}
		j := detail.Job
		msg := fmt.Sprintf("Waiting for job %q to complete: %s succeeded, %d active, %d failed...\n", name, jobCompletions(j), j.Status.Active, j.Status.Failed)
		if msg != last {
			fmt.Fprint(out, msg)
			last = msg
		}
		if done, how := workload.JobFinished(j); done {
			for _, c := range j.Status.Conditions {
				if c.Type == how && how == batchv1.JobFailed {
					return fmt.Errorf("job %q failed (%s): %s", name, c.Reason, c.Message)
				}
			}
			fmt.Fprintf(out, "job %q completed\n", name)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}
