package workload

import (
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var jobNow = time.Unix(100000, 0)

func newJob(completions *int32, parallelism int32, policy v1.RestartPolicy) *batchv1.Job {
	start := metav1.NewTime(jobNow.Add(-time.Hour))
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Completions: completions, Parallelism: ptr.To(parallelism), BackoffLimit: ptr.To(int32(6)),
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: policy}},
		},
		Status: batchv1.JobStatus{StartTime: &start},
	}
}

func jobPod(name string, phase v1.PodPhase, index int) JobPod {
	return JobPod{Pod: Pod{Name: name, Phase: phase, Created: jobNow.Add(-time.Minute)}, Index: index, Finished: jobNow.Add(-time.Hour)}
}

func jobCond(st batchv1.JobStatus, t batchv1.JobConditionType) string {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return c.Reason
		}
	}
	return "-"
}

func TestReconcileJobParallelism(t *testing.T) {
	cases := []struct {
		name         string
		completions  *int32
		parallelism  int32
		pods         []JobPod
		wantCreate   int
		wantDelete   []string
		wantComplete bool
	}{
		{name: "new job: parallelism pods", completions: ptr.To(int32(5)), parallelism: 2, wantCreate: 2},
		{name: "never more than the completions left", completions: ptr.To(int32(3)), parallelism: 4,
			pods: []JobPod{jobPod("a", v1.PodSucceeded, -1), jobPod("b", v1.PodSucceeded, -1)}, wantCreate: 1},
		{name: "parallelism lowered: excess deleted, not ready first", completions: ptr.To(int32(5)), parallelism: 1,
			pods: []JobPod{{Pod: Pod{Name: "ready", Phase: v1.PodRunning, Ready: true}, Index: -1}, jobPod("pending", v1.PodPending, -1)}, wantDelete: []string{"pending"}},
		{name: "completions reached", completions: ptr.To(int32(2)), parallelism: 2,
			pods: []JobPod{jobPod("a", v1.PodSucceeded, -1), jobPod("b", v1.PodSucceeded, -1)}, wantComplete: true},
		{name: "work queue: pods until one succeeds", parallelism: 3, wantCreate: 3},
		{name: "work queue: one succeeded, others finish first", parallelism: 3,
			pods: []JobPod{jobPod("a", v1.PodSucceeded, -1), jobPod("b", v1.PodRunning, -1)}},
		{name: "work queue: one succeeded and none runs: complete", parallelism: 3,
			pods: []JobPod{jobPod("a", v1.PodSucceeded, -1), jobPod("b", v1.PodSucceeded, -1)}, wantComplete: true},
		{name: "parallelism 0: nothing runs", completions: ptr.To(int32(2)), parallelism: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ReconcileJob(newJob(tc.completions, tc.parallelism, v1.RestartPolicyNever), tc.pods, jobNow)
			if len(got.Create) != tc.wantCreate || !slices.Equal(got.Delete, tc.wantDelete) || (jobCond(got.Status, batchv1.JobComplete) != "-") != tc.wantComplete {
				t.Fatalf("create %v delete %v conditions %+v; want %d creates, delete %v, complete %v", got.Create, got.Delete, got.Status.Conditions, tc.wantCreate, tc.wantDelete, tc.wantComplete)
			}
			if tc.wantComplete && (got.Status.CompletionTime == nil || jobCond(got.Status, batchv1.JobSuccessCriteriaMet) != JobReasonCompletionsReached) {
				t.Fatalf("complete without completionTime or SuccessCriteriaMet: %+v", got.Status)
			}
		})
	}
}

func TestReconcileJobFailureCounting(t *testing.T) {
	failed := func(name string, ago time.Duration) JobPod {
		p := jobPod(name, v1.PodFailed, -1)
		p.Finished = jobNow.Add(-ago)
		return p
	}
	running := func(name string, restarts int32) JobPod {
		p := jobPod(name, v1.PodRunning, -1)
		p.Restarts = restarts
		return p
	}
	cases := []struct {
		name       string
		policy     v1.RestartPolicy
		limit      int32
		pods       []JobPod
		wantReason string // FailureTarget
		wantFailed bool
		wantCreate int
		wantDelete []string
	}{
		{name: "Never: failures up to the limit are retried", policy: v1.RestartPolicyNever, limit: 1,
			pods: []JobPod{failed("a", time.Hour)}, wantReason: "-", wantCreate: 1},
		{name: "Never: limit+1 failed pods fail the Job", policy: v1.RestartPolicyNever, limit: 1,
			pods: []JobPod{failed("a", time.Hour), failed("b", time.Hour)}, wantReason: JobReasonBackoffLimitExceeded, wantFailed: true},
		{name: "Never: backoffLimit 0 fails at the first failure", policy: v1.RestartPolicyNever, limit: 0,
			pods: []JobPod{failed("a", time.Hour)}, wantReason: JobReasonBackoffLimitExceeded, wantFailed: true},
		{name: "Never: failure back-off holds the next pod", policy: v1.RestartPolicyNever, limit: 6,
			pods: []JobPod{failed("a", 5*time.Second)}, wantReason: "-"},
		{name: "OnFailure: restarts below the limit", policy: v1.RestartPolicyOnFailure, limit: 3,
			pods: []JobPod{running("a", 2)}, wantReason: "-"},
		{name: "OnFailure: restarts reach the limit: pods deleted, then Failed", policy: v1.RestartPolicyOnFailure, limit: 3,
			pods: []JobPod{running("a", 3)}, wantReason: JobReasonBackoffLimitExceeded, wantDelete: []string{"a"}},
		{name: "OnFailure: limit 0 and one restart", policy: v1.RestartPolicyOnFailure, limit: 0,
			pods: []JobPod{running("a", 1)}, wantReason: JobReasonBackoffLimitExceeded, wantDelete: []string{"a"}},
		{name: "OnFailure: finished pods' restarts are not counted", policy: v1.RestartPolicyOnFailure, limit: 2,
			pods: []JobPod{{Pod: Pod{Name: "a", Phase: v1.PodSucceeded}, Index: -1, Restarts: 5}, running("b", 1)}, wantReason: "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob(ptr.To(int32(2)), 1, tc.policy)
			job.Spec.BackoffLimit = ptr.To(tc.limit)
			got := ReconcileJob(job, tc.pods, jobNow)
			if r := jobCond(got.Status, batchv1.JobFailureTarget); r != tc.wantReason {
				t.Fatalf("FailureTarget %q, want %q (%+v)", r, tc.wantReason, got.Status.Conditions)
			}
			if (jobCond(got.Status, batchv1.JobFailed) != "-") != tc.wantFailed || len(got.Create) != tc.wantCreate || !slices.Equal(got.Delete, tc.wantDelete) {
				t.Fatalf("failed %q create %v delete %v; want failed %v, %d creates, delete %v", jobCond(got.Status, batchv1.JobFailed), got.Create, got.Delete, tc.wantFailed, tc.wantCreate, tc.wantDelete)
			}
		})
	}
}

func TestJobBackoffDoublesAndCaps(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {6, 320 * time.Second}, {7, 6 * time.Minute}, {20, 6 * time.Minute}} {
		var pods []JobPod
		last := jobNow
		for i := range tc.failures {
			p := jobPod(fmt.Sprint(i), v1.PodFailed, -1)
			p.Finished = jobNow.Add(time.Duration(i-tc.failures+1) * time.Second)
			last = p.Finished
			pods = append(pods, p)
		}
		if got := backoffUntil(pods).Sub(last); got != tc.want {
			t.Errorf("%d failures: back-off %v, want %v", tc.failures, got, tc.want)
		}
	}
	success := jobPod("ok", v1.PodSucceeded, -1)
	success.Finished = jobNow
	if got := backoffUntil([]JobPod{jobPod("old", v1.PodFailed, -1), success}); !got.IsZero() {
		t.Errorf("a success after the failure resets the back-off; got %v", got)
	}
}

func TestReconcileJobDeadline(t *testing.T) {
	job := newJob(ptr.To(int32(1)), 1, v1.RestartPolicyNever)
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
	start := metav1.NewTime(jobNow.Add(-30 * time.Second))
	job.Status.StartTime = &start
	got := ReconcileJob(job, []JobPod{jobPod("a", v1.PodRunning, -1)}, jobNow)
	if jobCond(got.Status, batchv1.JobFailureTarget) != "-" || !got.Requeue.Equal(jobNow.Add(30*time.Second)) {
		t.Fatalf("before the deadline: %+v requeue %v", got.Status.Conditions, got.Requeue)
	}
	later := jobNow.Add(30 * time.Second)
	got = ReconcileJob(job, []JobPod{jobPod("a", v1.PodRunning, -1)}, later)
	if jobCond(got.Status, batchv1.JobFailureTarget) != JobReasonDeadlineExceeded || !slices.Equal(got.Delete, []string{"a"}) || jobCond(got.Status, batchv1.JobFailed) != "-" {
		t.Fatalf("at the deadline: want FailureTarget, the pod deleted, not Failed yet: %+v delete %v", got.Status.Conditions, got.Delete)
	}
	job.Status = got.Status
	dead := jobPod("a", v1.PodRunning, -1)
	dead.Deleting = true
	if got = ReconcileJob(job, []JobPod{dead}, later); jobCond(got.Status, batchv1.JobFailed) != "-" || len(got.Create) != 0 {
		t.Fatalf("pod terminating: not Failed yet, nothing made: %+v", got)
	}
	if got = ReconcileJob(job, []JobPod{jobPod("a", v1.PodFailed, -1)}, later); jobCond(got.Status, batchv1.JobFailed) != JobReasonDeadlineExceeded || len(got.Create) != 0 {
		t.Fatalf("pod gone: Failed with DeadlineExceeded: %+v", got.Status.Conditions)
	}
}

func TestReconcileJobIndexed(t *testing.T) {
	job := newJob(ptr.To(int32(4)), 2, v1.RestartPolicyNever)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	got := ReconcileJob(job, nil, jobNow)
	if !slices.Equal(got.Create, []int{0, 1}) {
		t.Fatalf("first pass: create %v, want indexes 0 and 1", got.Create)
	}
	pods := []JobPod{jobPod("a", v1.PodSucceeded, 0), jobPod("b", v1.PodRunning, 1), jobPod("c", v1.PodSucceeded, 3)}
	got = ReconcileJob(job, pods, jobNow)
	if !slices.Equal(got.Create, []int{2}) || got.Status.CompletedIndexes != "0,3" || got.Status.Succeeded != 2 || got.Status.Active != 1 {
		t.Fatalf("create %v completedIndexes %q status %+v; want [2], \"0,3\"", got.Create, got.Status.CompletedIndexes, got.Status)
	}
	pods = append(pods, jobPod("d", v1.PodSucceeded, 2), jobPod("e", v1.PodSucceeded, 1))
	pods[1].Phase = v1.PodFailed
	got = ReconcileJob(job, pods, jobNow)
	if got.Status.CompletedIndexes != "0-3" || jobCond(got.Status, batchv1.JobComplete) != JobReasonCompletionsReached {
		t.Fatalf("every index done: completedIndexes %q conditions %+v", got.Status.CompletedIndexes, got.Status.Conditions)
	}
	pod := NewJobPod(job, 2)
	if pod.Labels[JobCompletionIndexKey] != "2" || pod.Annotations[JobCompletionIndexKey] != "2" || pod.Spec.Hostname != "pi-2" ||
		len(pod.Name) != len("pi-2-")+5 || pod.GenerateName != "pi-2-" || pod.OwnerReferences[0].Kind != "Job" {
		t.Fatalf("indexed pod: %+v", pod.ObjectMeta)
	}
}

func TestReconcileJobSuspend(t *testing.T) {
	job := newJob(ptr.To(int32(2)), 2, v1.RestartPolicyNever)
	job.Spec.Suspend = ptr.To(true)
	got := ReconcileJob(job, []JobPod{jobPod("a", v1.PodRunning, -1)}, jobNow)
	if !slices.Equal(got.Delete, []string{"a"}) || len(got.Create) != 0 || jobCond(got.Status, batchv1.JobSuspended) != JobReasonSuspended || got.Status.StartTime != nil {
		t.Fatalf("suspended: %+v", got)
	}
	job.Status = got.Status
	job.Spec.Suspend = ptr.To(false)
	got = ReconcileJob(job, nil, jobNow)
	if len(got.Create) != 2 || got.Status.StartTime == nil || !got.Status.StartTime.Time.Equal(jobNow) {
		t.Fatalf("resumed: %+v", got)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == batchv1.JobSuspended && (c.Status != v1.ConditionFalse || c.Reason != JobReasonResumed) {
			t.Fatalf("resumed: condition %+v", c)
		}
	}
}

func TestReconcileJobTTL(t *testing.T) {
	job := newJob(ptr.To(int32(1)), 1, v1.RestartPolicyNever)
	job.Spec.TTLSecondsAfterFinished = ptr.To(int32(100))
	done := ReconcileJob(job, []JobPod{jobPod("a", v1.PodSucceeded, -1)}, jobNow)
	job.Status = done.Status
	if got := ReconcileJob(job, []JobPod{jobPod("a", v1.PodSucceeded, -1)}, jobNow.Add(99*time.Second)); got.Expired || !got.Requeue.Equal(jobNow.Add(100*time.Second)) {
		t.Fatalf("before the TTL: %+v", got)
	}
	if got := ReconcileJob(job, []JobPod{jobPod("a", v1.PodSucceeded, -1)}, jobNow.Add(100*time.Second)); !got.Expired || len(got.Create)+len(got.Delete) != 0 {
		t.Fatalf("at the TTL: %+v", got)
	}
}

func TestFormatIndexes(t *testing.T) {
	set := map[int]bool{0: true, 1: true, 2: true, 4: true, 6: true, 7: true, 9: true}
	if got := formatIndexes(set, 9); got != "0-2,4,6,7" {
		t.Fatalf("got %q", got)
	}
}

// The counts are the Job's own, kept in its status: a counted pod is not
// counted again, a pod gone since stays counted, and a pod deleted before
// it succeeded is a failure (podReplacementPolicy TerminatingOrFailed).
func TestReconcileJobCountsEachPodOnce(t *testing.T) {
	job := newJob(ptr.To(int32(3)), 1, v1.RestartPolicyNever)
	job.Spec.BackoffLimit = ptr.To(int32(2))
	job.Status.Failed, job.Status.Succeeded = 1, 1 // pods since deleted
	counted := jobPod("counted", v1.PodFailed, -1)
	counted.UID, counted.Counted = "u1", true
	got := ReconcileJob(job, []JobPod{counted}, jobNow)
	if got.Status.Failed != 1 || got.Status.Succeeded != 1 || len(got.Counted) != 0 {
		t.Fatalf("nothing new: status %+v counted %v", got.Status, got.Counted)
	}
	deleted := jobPod("deleted", v1.PodRunning, -1)
	deleted.UID, deleted.Deleting = "u2", true
	got = ReconcileJob(job, []JobPod{counted, deleted}, jobNow)
	if got.Status.Failed != 2 || got.Status.Terminating == nil || *got.Status.Terminating != 1 || !slices.Equal(got.Counted, []string{"u2"}) ||
		jobCond(got.Status, batchv1.JobFailureTarget) != "-" {
		t.Fatalf("a deleted running pod: status %+v counted %v", got.Status, got.Counted)
	}
	job.Status = got.Status
	failed := jobPod("failed", v1.PodFailed, -1)
	failed.UID = "u3"
	got = ReconcileJob(job, []JobPod{failed}, jobNow)
	if got.Status.Failed != 3 || jobCond(got.Status, batchv1.JobFailed) != JobReasonBackoffLimitExceeded {
		t.Fatalf("a third failure past backoffLimit 2, two of them gone: status %+v", got.Status)
	}

	suspended := newJob(ptr.To(int32(1)), 1, v1.RestartPolicyNever)
	suspended.Spec.Suspend = ptr.To(true)
	if got := ReconcileJob(suspended, []JobPod{deleted}, jobNow); got.Status.Failed != 0 {
		t.Fatalf("a pod deleted by the suspension counted as failed: %+v", got.Status)
	}
	indexed := newJob(ptr.To(int32(3)), 1, v1.RestartPolicyNever)
	indexed.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	indexed.Status.CompletedIndexes, indexed.Status.Succeeded = "0,2", 2
	if got := ReconcileJob(indexed, nil, jobNow); !slices.Equal(got.Create, []int{1}) || got.Status.CompletedIndexes != "0,2" {
		t.Fatalf("completed indexes kept after their pods went: create %v status %+v", got.Create, got.Status)
	}
}

func TestReconcileJobPodFailurePolicy(t *testing.T) {
	job := newJob(ptr.To(int32(1)), 1, v1.RestartPolicyNever)
	job.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{42}}},
	}}
	failed := func(name string, code int32, conditions ...v1.PodConditionType) JobPod {
		p := jobPod(name, v1.PodFailed, -1)
		p.UID, p.Exits = name, []ContainerExit{{Name: "main", Code: code}}
		p.Conditions = map[v1.PodConditionType]v1.ConditionStatus{}
		for _, c := range conditions {
			p.Conditions[c] = v1.ConditionTrue
		}
		return p
	}
	got := ReconcileJob(job, []JobPod{failed("a", 42)}, jobNow)
	if jobCond(got.Status, batchv1.JobFailed) != JobReasonPodFailurePolicy || got.Status.Failed != 1 {
		t.Fatalf("exit code 42: FailJob; status %+v", got.Status)
	}
	if msg := got.Status.Conditions[0].Message; msg != "Container main for pod default/a failed with exit code 42 matching FailJob rule at index 0" {
		t.Fatalf("message %q", msg)
	}
	got = ReconcileJob(job, []JobPod{failed("b", 1, v1.DisruptionTarget)}, jobNow)
	if jobCond(got.Status, batchv1.JobFailureTarget) != "-" || got.Status.Failed != 0 || !slices.Equal(got.Counted, []string{"b"}) {
		t.Fatalf("a disrupted pod: ignored (not counted as failed); status %+v counted %v", got.Status, got.Counted)
	}
	got = ReconcileJob(job, []JobPod{failed("c", 1)}, jobNow)
	if jobCond(got.Status, batchv1.JobFailureTarget) != "-" || got.Status.Failed != 1 {
		t.Fatalf("exit code 1: counted; status %+v", got.Status)
	}
	deleting := jobPod("d", v1.PodRunning, -1)
	deleting.UID, deleting.Deleting = "d", true
	got = ReconcileJob(job, []JobPod{deleting}, jobNow)
	if got.Status.Failed != 0 || len(got.Create) != 0 {
		t.Fatalf("podReplacementPolicy Failed: a terminating pod is neither counted nor replaced yet: %+v create %v", got.Status, got.Create)
	}
}
