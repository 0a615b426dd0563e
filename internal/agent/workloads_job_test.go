package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/workload"
)

const twoCompletions = `
apiVersion: batch/v1
kind: Job
metadata: {name: two}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: work, image: busybox:1, command: [sleep, "1000"]}
`

func (a *testAgent) job(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	d, err := a.DescribeWorkload(agentapi.ResourceJob, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return d.Job
}

func (a *testAgent) jobPods(name string) map[string]v1.Pod {
	out := map[string]v1.Pod{}
	for _, p := range a.ListPods("default").Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "Job" && ref.Name == name {
			out[p.Name] = p
		}
	}
	return out
}

func podsIn(pods map[string]v1.Pod, phase v1.PodPhase) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase == phase {
			n++
		}
	}
	return n
}

// A Job's pods run one after another to its completions across a restart
// of the agent; finished pods stay; ttlSecondsAfterFinished 0 then deletes
// the Job with its pods.
func TestJobCompletesAcrossARestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, twoCompletions)
	waitFor(t, "the first pod runs", func() bool { return podsIn(first.jobPods("two"), v1.PodRunning) == 1 })
	if err := rt.Exit("work", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second pod runs", func() bool {
		pods := first.jobPods("two")
		return podsIn(pods, v1.PodSucceeded) == 1 && podsIn(pods, v1.PodRunning) == 1 && first.job(t, "two").Status.Succeeded == 1
	})
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the restarted agent sees the running pod", func() bool { return podsIn(second.jobPods("two"), v1.PodRunning) == 1 })
	if err := rt.Exit("work", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Job completes", func() bool { return second.job(t, "two").Status.CompletionTime != nil })
	if j := second.job(t, "two"); j.Status.Succeeded != 2 || j.Status.Failed != 0 || len(second.jobPods("two")) != 2 {
		t.Fatalf("status %+v, pods %v", j.Status, keys(second.jobPods("two")))
	}

	// A pod deleted by hand stays counted: the counts are the Job's.
	for name := range second.jobPods("two") {
		if _, err := second.Delete(context.Background(), "default", name, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pod gone", func() bool { _, found := second.jobPods("two")[name]; return !found })
		break
	}
	if j := second.job(t, "two"); j.Status.Succeeded != 2 || len(second.jobPods("two")) != 1 {
		t.Fatalf("after a pod was deleted: status %+v", j.Status)
	}

	// A finished Job's TTL of 0 deletes it and its pods.
	second.apply(t, strings.Replace(twoCompletions, "completions: 2", "completions: 2\n  ttlSecondsAfterFinished: 0", 1))
	waitFor(t, "the Job and its pods gone", func() bool {
		l, _ := second.ListWorkloads(agentapi.ResourceJob, "")
		files, _ := os.ReadDir(filepath.Join(dir, "root", "workloads"))
		return len(l.Jobs) == 0 && len(second.ListPods("").Items) == 0 && len(files) == 0
	})
}

const everyMinuteCronJob = `
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: work, image: busybox:1, command: [sleep, "1000"]}
`

// The agent died after saving a scheduled time's Job and before saving
// the CronJob's lastScheduleTime: the restarted agent finds the Job by its
// name and does not run that time again.
func TestCronJobRunIsNotRepeatedAfterACrash(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, everyMinuteCronJob)
	first.stop()

	first.mu.Lock()
	var cj *workloadObj
	for _, o := range first.workloads {
		cj = o
	}
	created := metav1.NewTime(time.Now().Add(-90 * time.Second))
	cj.cj.CreationTimestamp = created
	sched, err := workload.ParseSchedule(cj.cj.Spec.Schedule, nil)
	if err != nil {
		t.Fatal(err)
	}
	due := sched.Next(created.Time)
	act := workload.ReconcileCronJob(cj.cj, nil, due.Add(time.Second))
	if act.Create == nil || act.Create.Name != workload.CronJobJobName("tick", due) {
		t.Fatalf("reconcile at %v: %+v", due, act)
	}
	act.Create.UID = "saved-before-the-crash"
	workload.SetJobSelector(act.Create)
	for _, o := range []*workloadObj{cj, {job: act.Create, events: cj.events}} {
		if err := first.saveLocked(o); err != nil {
			t.Fatal(err)
		}
	}
	first.mu.Unlock()

	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the CronJob lists the saved Job as active", func() bool {
		d, err := second.DescribeWorkload(agentapi.ResourceCronJob, "default", "tick")
		return err == nil && len(d.CronJob.Status.Active) > 0
	})
	second.reconcileWorkloads() // two more controller passes, done before the list
	second.reconcileWorkloads()
	l, err := second.ListWorkloads(agentapi.ResourceJob, "default")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, j := range l.Jobs {
		seen[j.Name]++
		if j.Name == act.Create.Name && j.UID != "saved-before-the-crash" {
			t.Fatalf("the Job of %v was made again: %s", due, j.UID)
		}
	}
	if seen[act.Create.Name] != 1 {
		t.Fatalf("jobs %v", seen)
	}
	if _, err := second.DeleteWorkload(context.Background(), agentapi.ResourceCronJob, "default", "tick", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CronJob, its Jobs and pods gone", func() bool {
		files, _ := os.ReadDir(filepath.Join(dir, "root", "workloads"))
		return len(second.ListPods("").Items) == 0 && len(files) == 0
	})
}

const perIndexJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: perindex}
spec:
  completionMode: Indexed
  completions: 2
  backoffLimitPerIndex: 1
  maxFailedIndexes: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: work, image: busybox:1, command: [sleep, "1000"]}
`

// A Job with backoffLimitPerIndex: its pods carry the index failure count
// annotation and its status an empty failedIndexes; backoffLimitPerIndex
// and successPolicy cannot change on a re-apply, maxFailedIndexes can.
func TestPerIndexJobPodsAndImmutableFields(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	a.apply(t, perIndexJob)
	waitFor(t, "the first pod", func() bool { return len(a.jobPods("perindex")) == 1 })
	for name, p := range a.jobPods("perindex") {
		if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "0" {
			t.Fatalf("pod %s annotations %v", name, p.Annotations)
		}
	}
	waitFor(t, "failedIndexes set", func() bool { f := a.job(t, "perindex").Status.FailedIndexes; return f != nil && *f == "" })
	for _, tc := range []struct{ from, to, field string }{
		{"backoffLimitPerIndex: 1", "backoffLimitPerIndex: 2", "spec.backoffLimitPerIndex"},
		{"maxFailedIndexes: 1", "maxFailedIndexes: 1\n  successPolicy: {rules: [{succeededCount: 1}]}", "spec.successPolicy"},
	} {
		_, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: bundle(t, strings.Replace(perIndexJob, tc.from, tc.to, 1))})
		if err == nil || !strings.Contains(err.Error(), "Job default/perindex: "+tc.field+": Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
			t.Errorf("%s changed: %v", tc.field, err)
		}
	}
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: bundle(t, strings.Replace(perIndexJob, "maxFailedIndexes: 1", "maxFailedIndexes: 2", 1))}); err != nil {
		t.Errorf("maxFailedIndexes changed: %v", err)
	}
}
