package e2e

import (
	"regexp"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

const perIndexJob = `apiVersion: batch/v1
kind: Job
metadata: {name: perindex}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  backoffLimitPerIndex: 1
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'if [ "$JOB_COMPLETION_INDEX" = 1 ]; then exit 3; fi; echo ok']
`

// An Indexed Job with backoffLimitPerIndex 1 whose index 1 always fails:
// that index is tried twice (its pods annotated with failure counts 0 and
// 1), lands in status.failedIndexes while indexes 0 and 2 succeed, and the
// Job fails with FailedIndexes.
func TestJobBackoffLimitPerIndex(t *testing.T) {
	onEachRuntime(t, jobBackoffLimitPerIndex)
}

func jobBackoffLimitPerIndex(t *testing.T, n *node) {
	out, errOut, err := n.berth("run", "-f", n.write("perindex.yaml", perIndexJob))
	if err == nil || !strings.Contains(errOut, `job "perindex" failed (FailedIndexes): Job has failed indexes`) {
		t.Fatalf("run -f: %q %q %v", out, errOut, err)
	}
	job := n.waitJob("perindex", "failed", func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) != "" })
	if jobCondition(job, batchv1.JobFailed) != "FailedIndexes" || job.Status.FailedIndexes == nil || *job.Status.FailedIndexes != "1" ||
		job.Status.CompletedIndexes != "0,2" || job.Status.Succeeded != 2 || job.Status.Failed != 2 {
		t.Fatalf("status %+v", job.Status)
	}
	counts := map[string]int{}
	for name, p := range n.jobPods("perindex") {
		index := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		counts[index+"/"+p.Annotations[batchv1.JobIndexFailureCountAnnotation]+"/"+string(p.Status.Phase)]++
		if index != "1" && p.Status.Phase != v1.PodSucceeded {
			t.Errorf("pod %s of index %s: %s", name, index, p.Status.Phase)
		}
	}
	if counts["1/0/Failed"] != 1 || counts["1/1/Failed"] != 1 || counts["0/0/Succeeded"] != 1 || counts["2/0/Succeeded"] != 1 || len(counts) != 4 {
		t.Errorf("pods by index/failure count/phase: %v", counts)
	}
	if out := n.must("describe", "job", "perindex"); !regexp.MustCompile(`(?m)^Backoff Limit Per Index: +1$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^Failed Indexes: +1$`).MatchString(out) || !strings.Contains(out, "FailedIndexes") {
		t.Errorf("describe job perindex:\n%s", out)
	}
}

// jobCondition is the reason of the Job's condition of that type when
// true, else "".
func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) string {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

const successPolicyJob = `apiVersion: batch/v1
kind: Job
metadata: {name: leader}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  successPolicy:
    rules:
    - succeededIndexes: "0"
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'if [ "$JOB_COMPLETION_INDEX" = 0 ]; then sleep 2; echo done; exit 0; fi; exec sleep 3600']
`

// An Indexed Job whose successPolicy asks for index 0 only: once it
// succeeded the Job gets SuccessCriteriaMet (SuccessPolicy), the sleeping
// pods of indexes 1 and 2 are terminated, and it is Complete.
func TestJobSuccessPolicy(t *testing.T) {
	onEachRuntime(t, jobSuccessPolicy)
}

func jobSuccessPolicy(t *testing.T, n *node) {
	out, errOut, err := n.berth("run", "-f", n.write("leader.yaml", successPolicyJob))
	if err != nil || !strings.Contains(out, `job "leader" completed`) {
		t.Fatalf("run -f: %q %q %v", out, errOut, err)
	}
	job := n.waitJob("leader", "complete", func(j *batchv1.Job) bool { return j.Status.CompletionTime != nil })
	if jobCondition(job, batchv1.JobSuccessCriteriaMet) != "SuccessPolicy" || jobCondition(job, batchv1.JobComplete) != "SuccessPolicy" ||
		jobCondition(job, batchv1.JobFailed) != "" || job.Status.CompletedIndexes != "0" || job.Status.Active != 0 {
		t.Fatalf("status %+v", job.Status)
	}
	for name, p := range n.jobPods("leader") {
		index := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if (index == "0") != (p.Status.Phase == v1.PodSucceeded) || p.Status.Phase == v1.PodRunning || p.Status.Phase == v1.PodPending {
			t.Errorf("pod %s of index %s: %s (want index 0 Succeeded, the others terminated)", name, index, p.Status.Phase)
		}
	}
	if out := n.must("describe", "job", "leader"); !strings.Contains(out, "Matched rules at index 0") {
		t.Errorf("describe job leader:\n%s", out)
	}
}
