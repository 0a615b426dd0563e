package main

import (
	"bytes"
	"regexp"
	"testing"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

func TestBatchTables(t *testing.T) {
	now := time.Unix(100000, 0)
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	jobs := agentapi.WorkloadList{Jobs: []batchv1.Job{
		{ObjectMeta: metav1.ObjectMeta{Name: "done", CreationTimestamp: *ago(time.Minute)}, Spec: batchv1.JobSpec{Completions: ptr.To(int32(3))},
			Status: batchv1.JobStatus{Succeeded: 3, StartTime: ago(time.Minute), CompletionTime: ago(40 * time.Second),
				Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: v1.ConditionTrue}, {Type: batchv1.JobComplete, Status: v1.ConditionTrue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "queue", CreationTimestamp: *ago(time.Hour)}, Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(4))},
			Status: batchv1.JobStatus{StartTime: ago(time.Hour), Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: v1.ConditionTrue}}}},
	}}
	var out bytes.Buffer
	if err := writeBatchTable(&out, jobs, false, false, now); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^NAME +STATUS +COMPLETIONS +DURATION +AGE\ndone +Complete +3/3 +20s +60s\nqueue +FailureTarget +0/1 of 4 +60m +60m\n$`).MatchString(out.String()) {
		t.Errorf("jobs:\n%s", out.String())
	}
	cronJobs := agentapi.WorkloadList{CronJobs: []batchv1.CronJob{{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", CreationTimestamp: *ago(2 * time.Hour)},
		Spec:       batchv1.CronJobSpec{Schedule: "*/5 * * * *", TimeZone: ptr.To("Europe/Paris"), Suspend: ptr.To(true)},
		Status:     batchv1.CronJobStatus{Active: []v1.ObjectReference{{Name: "tick-1"}}, LastScheduleTime: ago(3 * time.Minute)},
	}}}
	out.Reset()
	if err := writeBatchTable(&out, cronJobs, true, false, now); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^NAMESPACE +NAME +SCHEDULE +TIMEZONE +SUSPEND +ACTIVE +LAST SCHEDULE +AGE\n +tick +\*/5 \* \* \* \* +Europe/Paris +True +1 +3m +120m\n$`).MatchString(out.String()) {
		t.Errorf("cronjobs:\n%s", out.String())
	}
}

func TestJobFromCronJob(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "ns", UID: "c1"},
		Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}}}
	j := jobFromCronJob(cj, "now")
	if j.Name != "now" || j.Namespace != "ns" || j.Annotations[instantiateAnnotation] != "manual" || j.Labels["a"] != "b" ||
		j.OwnerReferences[0].UID != "c1" || j.OwnerReferences[0].Kind != "CronJob" || !*j.OwnerReferences[0].Controller {
		t.Fatalf("job %+v", j.ObjectMeta)
	}
}

func TestDescribeJobPerIndex(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "idx"}, Spec: batchv1.JobSpec{
		Completions: ptr.To(int32(4)), CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimitPerIndex: ptr.To(int32(1)), MaxFailedIndexes: ptr.To(int32(2)),
	}, Status: batchv1.JobStatus{CompletedIndexes: "0,2", FailedIndexes: ptr.To("1,3")}}
	var out bytes.Buffer
	d := describer{tw: tabwriter.NewWriter(&out, 0, 8, 2, ' ', 0)}
	describeJob(d, agentapi.WorkloadDetail{Job: job})
	if err := d.tw.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`(?m)^Backoff Limit Per Index: +1$`, `(?m)^Max Failed Indexes: +2$`, `(?m)^Completed Indexes: +0,2$`, `(?m)^Failed Indexes: +1,3$`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("no %s in\n%s", want, out.String())
		}
	}
}
