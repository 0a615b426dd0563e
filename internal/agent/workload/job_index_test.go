package workload

import (
	"maps"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func perIndexJob(completions, parallelism, limit int32) *batchv1.Job {
	job := newJob(ptr.To(completions), parallelism, v1.RestartPolicyNever)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.BackoffLimitPerIndex = ptr.To(limit)
	job.Spec.BackoffLimit = ptr.To(int32(1 << 30))
	return job
}

// indexPod is a pod of an index that had failed `before` times.
func indexPod(name string, phase v1.PodPhase, index int, before int32, finishedAgo time.Duration) JobPod {
	p := jobPod(name, phase, index)
	p.UID, p.IndexFailures, p.Finished = name, before, jobNow.Add(-finishedAgo)
	return p
}

func TestBackoffLimitPerIndexRetriesThenFailsTheIndex(t *testing.T) {
	job := perIndexJob(3, 3, 1)
	got := ReconcileJob(job, nil, jobNow)
	if !slices.Equal(got.Create, []int{0, 1, 2}) || !maps.Equal(got.IndexFailures, map[int]IndexFailureCount{0: {}, 1: {}, 2: {}}) ||
		got.Status.FailedIndexes == nil || *got.Status.FailedIndexes != "" {
		t.Fatalf("first pass: create %v failures %v failedIndexes %v", got.Create, got.IndexFailures, got.Status.FailedIndexes)
	}
	running := []JobPod{indexPod("a", v1.PodRunning, 0, 0, 0), indexPod("c", v1.PodRunning, 2, 0, 0)}
	first := indexPod("b", v1.PodFailed, 1, 0, time.Hour)
	got = ReconcileJob(job, append(running, first), jobNow)
	if !slices.Equal(got.Create, []int{1}) || got.IndexFailures[1] != (IndexFailureCount{Failed: 1}) || *got.Status.FailedIndexes != "" || got.Status.Failed != 1 {
		t.Fatalf("first failure of index 1 (limit 1): retried with failure count 1; create %v failures %v status %+v", got.Create, got.IndexFailures, got.Status)
	}
	second := indexPod("b2", v1.PodFailed, 1, 1, time.Hour)
	got = ReconcileJob(job, append(running, first, second), jobNow)
	if len(got.Create) != 0 || *got.Status.FailedIndexes != "1" || jobCond(got.Status, batchv1.JobFailureTarget) != "-" {
		t.Fatalf("second failure: index 1 failed, not retried, the Job goes on; create %v status %+v", got.Create, got.Status)
	}
	job.Status = got.Status
	done := []JobPod{indexPod("a", v1.PodSucceeded, 0, 0, 0), indexPod("c", v1.PodSucceeded, 2, 0, 0)}
	got = ReconcileJob(job, append(done, first, second), jobNow)
	if jobCond(got.Status, batchv1.JobFailed) != JobReasonFailedIndexes || got.Status.CompletedIndexes != "0,2" || *got.Status.FailedIndexes != "1" {
		t.Fatalf("every index ended, one failed: want Failed FailedIndexes; status %+v", got.Status)
	}
	if c := findCondition(&got.Status, batchv1.JobFailed); c.Message != "Job has failed indexes" {
		t.Fatalf("message %q", c.Message)
	}
}

func TestBackoffLimitPerIndexBackoffIsPerIndex(t *testing.T) {
	job := perIndexJob(3, 3, 6)
	pods := []JobPod{indexPod("a", v1.PodFailed, 0, 2, 5*time.Second), indexPod("c", v1.PodRunning, 2, 0, 0)}
	got := ReconcileJob(job, pods, jobNow)
	if !slices.Equal(got.Create, []int{1}) || !got.Requeue.Equal(jobNow.Add(35*time.Second)) {
		t.Fatalf("index 0's third failure 5s ago holds it 40s, not index 1: create %v requeue %v", got.Create, got.Requeue.Sub(jobNow))
	}
	got = ReconcileJob(job, pods, jobNow.Add(35*time.Second))
	if !slices.Contains(got.Create, 0) || got.IndexFailures[0] != (IndexFailureCount{Failed: 3}) {
		t.Fatalf("after its back-off: index 0 made with failure count 3; create %v failures %v", got.Create, got.IndexFailures)
	}
	old := indexPod("old", v1.PodFailed, 0, 0, time.Hour)
	got = ReconcileJob(job, append(pods, old), jobNow.Add(35*time.Second))
	if got.IndexFailures[0] != (IndexFailureCount{Failed: 3}) {
		t.Fatalf("the replaced pod is the one with the most failures: %v", got.IndexFailures)
	}
}

func TestMaxFailedIndexesFailsTheJob(t *testing.T) {
	job := perIndexJob(4, 4, 0)
	job.Spec.MaxFailedIndexes = ptr.To(int32(1))
	pods := []JobPod{indexPod("a", v1.PodFailed, 0, 0, time.Hour), indexPod("b", v1.PodRunning, 1, 0, 0), indexPod("c", v1.PodRunning, 2, 0, 0), indexPod("d", v1.PodRunning, 3, 0, 0)}
	got := ReconcileJob(job, pods, jobNow)
	if jobCond(got.Status, batchv1.JobFailureTarget) != "-" || *got.Status.FailedIndexes != "0" {
		t.Fatalf("one failed index of at most 1: the Job goes on; status %+v", got.Status)
	}
	pods[1] = indexPod("b", v1.PodFailed, 1, 0, time.Hour)
	got = ReconcileJob(job, pods, jobNow)
	if jobCond(got.Status, batchv1.JobFailureTarget) != JobReasonMaxFailedIndexesExceeded || !slices.Equal(got.Delete, []string{"c", "d"}) ||
		jobCond(got.Status, batchv1.JobFailed) != "-" || *got.Status.FailedIndexes != "0,1" {
		t.Fatalf("two failed indexes: FailureTarget, the others deleted; status %+v delete %v", got.Status, got.Delete)
	}
	if c := findCondition(&got.Status, batchv1.JobFailureTarget); c.Message != "Job has exceeded the specified maximal number of failed indexes" {
		t.Fatalf("message %q", c.Message)
	}
	job.Status = got.Status
	pods[2], pods[3] = indexPod("c", v1.PodFailed, 2, 0, 0), indexPod("d", v1.PodFailed, 3, 0, 0)
	got = ReconcileJob(job, pods, jobNow)
	if jobCond(got.Status, batchv1.JobFailed) != JobReasonMaxFailedIndexesExceeded {
		t.Fatalf("none left running: Failed; %+v", got.Status.Conditions)
	}
}

func TestFailIndexAndIgnoreWithBackoffLimitPerIndex(t *testing.T) {
	job := perIndexJob(2, 2, 3)
	job.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{7}}},
	}}
	exit := func(p JobPod, code int32) JobPod {
		p.Exits = []ContainerExit{{Name: "main", Code: code}}
		return p
	}
	running := indexPod("b", v1.PodRunning, 1, 0, 0)
	got := ReconcileJob(job, []JobPod{exit(indexPod("a", v1.PodFailed, 0, 0, time.Hour), 42), running}, jobNow)
	if *got.Status.FailedIndexes != "0" || len(got.Create) != 0 || got.Status.Failed != 1 {
		t.Fatalf("FailIndex at the first failure (limit 3): index 0 failed; status %+v create %v", got.Status, got.Create)
	}
	got = ReconcileJob(job, []JobPod{exit(indexPod("a", v1.PodFailed, 0, 0, time.Hour), 1), running}, jobNow)
	if *got.Status.FailedIndexes != "" || !slices.Equal(got.Create, []int{0}) || got.IndexFailures[0] != (IndexFailureCount{Failed: 1}) {
		t.Fatalf("exit 1: counted, retried; status %+v create %v failures %v", got.Status, got.Create, got.IndexFailures)
	}
	ignored := exit(indexPod("a", v1.PodFailed, 0, 3, time.Hour), 7)
	got = ReconcileJob(job, []JobPod{ignored, running}, jobNow)
	if *got.Status.FailedIndexes != "" || got.Status.Failed != 0 || got.IndexFailures[0] != (IndexFailureCount{Failed: 3, Ignored: 1}) {
		t.Fatalf("an ignored failure neither fails the index nor counts; status %+v failures %v", got.Status, got.IndexFailures)
	}
}

func TestIndexFailureAnnotations(t *testing.T) {
	job := perIndexJob(2, 1, 1)
	pod := NewJobPod(job, 1)
	SetJobPodIndexFailures(pod, IndexFailureCount{Failed: 2})
	if pod.Annotations[batchv1.JobIndexFailureCountAnnotation] != "2" || pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != "" {
		t.Fatalf("annotations %v", pod.Annotations)
	}
	SetJobPodIndexFailures(pod, IndexFailureCount{Failed: 0, Ignored: 4})
	if got := JobPodIndexFailures(pod); got != (IndexFailureCount{Ignored: 4}) || pod.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
		t.Fatalf("read back %+v from %v", got, pod.Annotations)
	}
	for _, bad := range []string{"x", "-1", "4294967296"} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{batchv1.JobIndexFailureCountAnnotation: bad}}}
		if got := JobPodIndexFailures(p); got.Failed != 0 {
			t.Errorf("%q read as %d, want 0", bad, got.Failed)
		}
	}
	plain := newJob(ptr.To(int32(2)), 2, v1.RestartPolicyNever)
	plain.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	got := ReconcileJob(plain, []JobPod{indexPod("a", v1.PodFailed, 0, 5, time.Hour)}, jobNow)
	if got.Status.FailedIndexes != nil || got.IndexFailures != nil || !slices.Equal(got.Create, []int{0, 1}) {
		t.Fatalf("without backoffLimitPerIndex: no failed indexes, no annotations; status %+v create %v", got.Status, got.Create)
	}
}
