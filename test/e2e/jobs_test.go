package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

const indexedJob = `apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'echo "index=$JOB_COMPLETION_INDEX"']
`

const failingJob = `apiVersion: batch/v1
kind: Job
metadata: {name: fails}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'echo trying; exit 3']
`

const everyHour = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "@hourly"
  timeZone: Asia/Tokyo
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: work
            image: busybox
            imagePullPolicy: IfNotPresent
            command: [echo, tick]
`

// An Indexed Job of 3 completions, 2 at a time: pods idx-<index>-xxxxx
// each echo their JOB_COMPLETION_INDEX; `berth run -f` follows it to
// Complete; get/describe say so; delete takes its pods along.
func TestIndexedJobCompletes(t *testing.T) {
	onEachRuntime(t, indexedJobCompletes)
}

func indexedJobCompletes(t *testing.T, n *node) {
	out, errOut, err := n.berth("run", "-f", n.write("idx.yaml", indexedJob))
	if err != nil || !strings.Contains(out, "job.batch/idx created") || !strings.Contains(out, `job "idx" completed`) {
		t.Fatalf("run -f: %q %q %v", out, errOut, err)
	}
	job := n.waitJob("idx", "complete", func(j *batchv1.Job) bool { return j.Status.CompletionTime != nil })
	if job.Status.Succeeded != 3 || job.Status.CompletedIndexes != "0-2" || job.Status.Active != 0 {
		t.Errorf("status %+v", job.Status)
	}
	pods := n.jobPods("idx")
	if len(pods) != 3 {
		t.Fatalf("pods %v, want 3 (finished pods stay)", podNames(pods))
	}
	for name, p := range pods {
		m := regexp.MustCompile(`^idx-([0-2])-[bcdfghjklmnpqrstvwxz2456789]{5}$`).FindStringSubmatch(name)
		if m == nil || p.Labels["batch.kubernetes.io/job-completion-index"] != m[1] || p.Labels["job-name"] != "idx" || p.Status.Phase != v1.PodSucceeded {
			t.Errorf("pod %s: labels %v phase %s", name, p.Labels, p.Status.Phase)
			continue
		}
		if logs := n.must("logs", name); logs != "index="+m[1]+"\n" {
			t.Errorf("logs %s: %q", name, logs)
		}
	}
	if out := n.must("get", "job"); !regexp.MustCompile(`(?m)^NAME +STATUS +COMPLETIONS +DURATION +AGE\nidx +Complete +3/3 +\d+s +\d+s$`).MatchString(out) {
		t.Errorf("get job:\n%s", out)
	}
	if out := n.must("describe", "job", "idx"); !strings.Contains(out, "Completed Indexes:") || !strings.Contains(out, "0-2") ||
		!strings.Contains(out, "3 Succeeded") || !strings.Contains(out, "SuccessfulCreate") {
		t.Errorf("describe job idx:\n%s", out)
	}
	if out := n.must("delete", "job", "idx"); !strings.Contains(out, `job.batch "idx" deleted`) {
		t.Errorf("delete job: %q", out)
	}
	if pods := n.podList(); len(pods) != 0 {
		t.Errorf("after delete job: %d pods listed", len(pods))
	}
}

// A Job whose pod always fails, backoffLimit 1: two failed pods (the
// second after the 10 s back-off), then Failed with BackoffLimitExceeded;
// `berth run -f` fails with the reason.
func TestFailingJobHitsBackoffLimit(t *testing.T) {
	onEachRuntime(t, failingJobHitsBackoffLimit)
}

func failingJobHitsBackoffLimit(t *testing.T, n *node) {
	out, errOut, err := n.berth("run", "-f", n.write("fails.yaml", failingJob))
	if err == nil || !strings.Contains(errOut, `job "fails" failed (BackoffLimitExceeded): Job has reached the specified backoff limit`) {
		t.Fatalf("run -f: %q %q %v", out, errOut, err)
	}
	job := n.waitJob("fails", "failed", func(j *batchv1.Job) bool { return j.Status.Failed == 2 })
	var failed *batchv1.JobCondition
	for i, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed {
			failed = &job.Status.Conditions[i]
		}
	}
	if failed == nil || failed.Reason != "BackoffLimitExceeded" || job.Status.Succeeded != 0 || job.Status.Active != 0 {
		t.Fatalf("status %+v", job.Status)
	}
	if pods := n.jobPods("fails"); len(pods) != 2 {
		t.Errorf("pods %v, want the 2 failed ones", podNames(pods))
	}
	if out := n.must("get", "job", "fails"); !regexp.MustCompile(`(?m)^fails +Failed +0/1 +`).MatchString(out) {
		t.Errorf("get job:\n%s", out)
	}
	if out := n.must("describe", "job", "fails"); !strings.Contains(out, "BackoffLimitExceeded") || !strings.Contains(out, "0 Active (0 Ready) / 0 Succeeded / 2 Failed") {
		t.Errorf("describe job fails:\n%s", out)
	}
}

// A CronJob is applied and shown (its runs are covered by the fake-clock
// tests of package workload: a minute's schedule is too slow here);
// delete -f removes it.
func TestCronJobGetDescribeDelete(t *testing.T) {
	onEachRuntime(t, cronJobGetDescribeDelete)
}

func cronJobGetDescribeDelete(t *testing.T, n *node) {
	if out := n.apply("tick.yaml", everyHour); !strings.Contains(out, "cronjob.batch/tick created") {
		t.Fatalf("apply: %q", out)
	}
	if out := n.must("get", "cronjob"); !regexp.MustCompile(`(?m)^NAME +SCHEDULE +TIMEZONE +SUSPEND +ACTIVE +LAST SCHEDULE +AGE\ntick +@hourly +Asia/Tokyo +False +0 +<none> +\d+s$`).MatchString(out) {
		t.Errorf("get cronjob:\n%s", out)
	}
	if out := n.must("describe", "cj", "tick"); !strings.Contains(out, "Concurrency Policy:") || !strings.Contains(out, "Forbid") || !strings.Contains(out, "Successful Job History Limit:  3") {
		t.Errorf("describe cronjob:\n%s", out)
	}
	if out := n.must("delete", "-f", n.write("tick.yaml", everyHour)); !strings.Contains(out, `cronjob.batch "tick" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	if out, errOut, err := n.berth("get", "cronjob"); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
		t.Errorf("get cronjob after delete: %q %q %v", out, errOut, err)
	}
}

// waitJob polls a Job until cond holds.
func (n *node) waitJob(name, what string, cond func(*batchv1.Job) bool) *batchv1.Job {
	n.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceJob, "default", name)
		if err == nil && cond(detail.Job) {
			return detail.Job
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "job", name)
			n.t.Fatalf("job %s: timed out waiting until %s (last error %v)\n%s\n%s", name, what, err, desc, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jobPods lists the pods the Job owns.
func (n *node) jobPods(job string) map[string]v1.Pod {
	n.t.Helper()
	list, err := n.client.ListPods(context.Background(), "default")
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]v1.Pod{}
	for _, p := range list.Items {
		n.remember(&p)
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "Job" && ref.Name == job {
			out[p.Name] = p
		}
	}
	return out
}
