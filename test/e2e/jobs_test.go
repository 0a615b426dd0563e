package e2e

import (
	"context"
	"regexp"
	"strconv"
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

const policyJob = `apiVersion: batch/v1
kind: Job
metadata: {name: policy}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: work, operator: In, values: [42]}
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'exit 42']
`

const deadlineJob = `apiVersion: batch/v1
kind: Job
metadata: {name: slow}
spec:
  activeDeadlineSeconds: 6
  template:
    spec:
      restartPolicy: OnFailure
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sleep, "3600"]
`

const everyMinute = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
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

// A podFailurePolicy FailJob rule on exit code 42 fails the Job at its
// first pod, whatever its backoffLimit.
func TestJobPodFailurePolicyFailsJob(t *testing.T) {
	onEachRuntime(t, jobPodFailurePolicyFailsJob)
}

func jobPodFailurePolicyFailsJob(t *testing.T, n *node) {
	out, errOut, err := n.berth("run", "-f", n.write("policy.yaml", policyJob))
	if err == nil || !strings.Contains(errOut, `job "policy" failed (PodFailurePolicy): Container work for pod default/policy-`) ||
		!strings.Contains(errOut, "failed with exit code 42 matching FailJob rule at index 0") {
		t.Fatalf("run -f: %q %q %v", out, errOut, err)
	}
	if pods := n.jobPods("policy"); len(pods) != 1 {
		t.Errorf("pods %v, want the one that failed", podNames(pods))
	}
}

// A Job past its activeDeadlineSeconds, across a kill -9 of the agent: its
// start time is kept, its pod is killed, the Job Failed with
// DeadlineExceeded and the killed pod counted as failed.
func TestJobDeadlineAcrossAgentRestart(t *testing.T) {
	onEachRuntime(t, jobDeadlineAcrossAgentRestart)
}

func jobDeadlineAcrossAgentRestart(t *testing.T, n *node) {
	n.apply("slow.yaml", deadlineJob)
	before := n.waitJob("slow", "its pod is ready", func(j *batchv1.Job) bool { return j.Status.Ready != nil && *j.Status.Ready == 1 })
	n.restartAgent()
	job := n.waitJob("slow", "failed", func(j *batchv1.Job) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == v1.ConditionTrue {
				return true
			}
		}
		return false
	})
	var reason string
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed {
			reason = c.Reason
		}
	}
	if reason != "DeadlineExceeded" || job.Status.Failed != 1 || job.Status.Active != 0 || !job.Status.StartTime.Equal(before.Status.StartTime) {
		t.Errorf("status %+v (start time before the restart %v)", job.Status, before.Status.StartTime)
	}
	if elapsed := job.Status.Conditions[len(job.Status.Conditions)-1].LastTransitionTime.Sub(job.Status.StartTime.Time); elapsed < 6*time.Second {
		t.Errorf("failed %v after its start, before its deadline", elapsed)
	}
	if out := n.must("get", "job", "slow"); !regexp.MustCompile(`(?m)^slow +Failed +0/1 +`).MatchString(out) {
		t.Errorf("get job:\n%s", out)
	}
}

// A CronJob every minute runs once at the next minute (within 70 s): its
// Job tick-<minutes since the epoch> with the scheduled-timestamp
// annotation completes; get/describe show it; create job --from runs it
// by hand; delete -f removes the CronJob with its Jobs and pods. (Missed runs, policies and history are
// covered by the fake-clock tests of package workload.)
func TestCronJobRunsAndCascades(t *testing.T) {
	onEachRuntime(t, cronJobRunsAndCascades)
}

func cronJobRunsAndCascades(t *testing.T, n *node) {
	if out := n.apply("tick.yaml", everyMinute); !strings.Contains(out, "cronjob.batch/tick created") {
		t.Fatalf("apply: %q", out)
	}
	if out := n.must("get", "cronjob"); !regexp.MustCompile(`(?m)^NAME +SCHEDULE +TIMEZONE +SUSPEND +ACTIVE +LAST SCHEDULE +AGE\ntick +\* \* \* \* \* +Asia/Tokyo +False +[01] +(<none>|\d+s) +\d+s$`).MatchString(out) {
		t.Errorf("get cronjob:\n%s", out)
	}
	job := n.waitCronJobRun("tick", 75*time.Second)
	scheduled, err := time.Parse(time.RFC3339, job.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
	if err != nil || job.Name != "tick-"+strconv.FormatInt(scheduled.Unix()/60, 10) || scheduled.Second() != 0 || !strings.HasSuffix(job.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"], "+09:00") {
		t.Errorf("job %s annotations %v (%v)", job.Name, job.Annotations, err)
	}
	if pods := n.jobPods(job.Name); len(pods) != 1 {
		t.Errorf("job %s pods %v", job.Name, podNames(pods))
	}
	if out := n.must("get", "job", job.Name); !regexp.MustCompile(`(?m)^` + job.Name + ` +Complete +1/1 +`).MatchString(out) {
		t.Errorf("get job:\n%s", out)
	}
	if out := n.must("describe", "cj", "tick"); !strings.Contains(out, "Concurrency Policy:") || !strings.Contains(out, "Forbid") || !strings.Contains(out, "Successful Job History Limit:  3") {
		t.Errorf("describe cronjob:\n%s", out)
	}
	if out := n.must("describe", "cj", "tick"); !strings.Contains(out, job.Name+" (Complete)") || !strings.Contains(out, "SuccessfulCreate") {
		t.Errorf("describe cronjob after the run:\n%s", out)
	}
	if out := n.must("create", "job", "manual", "--from=cronjob/tick"); out != "job.batch/manual created\n" {
		t.Errorf("create job --from: %q", out)
	}
	manual := n.waitJob("manual", "complete", func(j *batchv1.Job) bool { return j.Status.CompletionTime != nil })
	if manual.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || manual.OwnerReferences[0].Name != "tick" {
		t.Errorf("job manual: %+v", manual.ObjectMeta)
	}
	if out := n.must("delete", "-f", n.write("tick.yaml", everyMinute)); !strings.Contains(out, `cronjob.batch "tick" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	for _, kind := range []string{"cronjob", "job"} {
		if out, errOut, err := n.berth("get", kind); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
			t.Errorf("get %s after delete: %q %q %v", kind, out, errOut, err)
		}
	}
	n.waitNoPods()
}

// waitCronJobRun waits until a Job of the CronJob completed, and returns it.
func (n *node) waitCronJobRun(cronJob string, limit time.Duration) *batchv1.Job {
	n.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceCronJob, "default", cronJob)
		if err == nil && len(detail.Jobs) > 0 && detail.Jobs[0].Status.CompletionTime != nil && detail.CronJob.Status.LastSuccessfulTime != nil {
			return &detail.Jobs[0]
		}
		if time.Now().After(deadline) {
			desc, _, _ := n.berth("describe", "cronjob", cronJob)
			n.t.Fatalf("cronjob %s: no completed run within %s (last error %v)\n%s\n%s", cronJob, limit, err, desc, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
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
