package workload

import (
	"math"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// Condition reasons and messages of an Indexed Job with
// backoffLimitPerIndex, as the job controller's.
const (
	JobReasonMaxFailedIndexesExceeded = batchv1.JobReasonMaxFailedIndexesExceeded
	JobReasonFailedIndexes            = batchv1.JobReasonFailedIndexes
	msgMaxFailedIndexes               = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes                  = "Job has failed indexes"
)

// IndexFailureCount is what a new pod of an index carries in its
// job-index-failure-count (Failed) and job-index-ignored-failure-count
// (Ignored, failures a podFailurePolicy Ignore rule matched) annotations:
// the failures of its index before it.
type IndexFailureCount struct {
	Failed, Ignored int32
}

// perIndexBackoff says whether the Job counts failures per index
// (backoffLimitPerIndex, Indexed only).
func perIndexBackoff(job *batchv1.Job) bool {
	return indexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// indexFailed says whether a newly failed pod fails its index, as the
// controller decides: a FailIndex rule matched it, or it is counted and
// its index had failed backoffLimitPerIndex times before it.
func indexFailed(job *batchv1.Job, p JobPod, verdict failurePolicyVerdict) bool {
	if !perIndexBackoff(job) || p.Index < 0 || p.Index >= completions(job) {
		return false
	}
	if verdict.failIndex {
		return true
	}
	return !verdict.ignore && p.IndexFailures >= *job.Spec.BackoffLimitPerIndex
}

// failedIndexesFailure says why failed indexes fail the Job, or "": more
// than maxFailedIndexes failed, or every index ended and some failed.
func failedIndexesFailure(job *batchv1.Job, c jobCounts) (string, string) {
	if !perIndexBackoff(job) {
		return "", ""
	}
	failed := len(c.failedIndexes)
	if m := job.Spec.MaxFailedIndexes; m != nil && failed > int(*m) {
		return JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes
	}
	if failed > 0 && failed+len(c.succeededIndexes) >= completions(job) {
		return JobReasonFailedIndexes, msgFailedIndexes
	}
	return "", ""
}

// createIndexes makes the first missing pending indexes (not succeeded,
// running, failed, or, with podReplacementPolicy Failed, terminating);
// with backoffLimitPerIndex, each after its own back-off, its pod
// carrying its index's failure counts.
func createIndexes(job *batchv1.Job, a *JobActions, c jobCounts, pods []JobPod, missing int, now time.Time) {
	var pending []int
	for i := 0; i < completions(job) && len(pending) < missing; i++ {
		if !c.succeededIndexes[i] && !c.activeIndexes[i] && !c.failedIndexes[i] && (!onlyFailedPodsCount(job) || !c.terminatingIndexes[i]) {
			pending = append(pending, i)
		}
	}
	if !perIndexBackoff(job) {
		a.Create = pending
		return
	}
	last := lastFailedPods(job, pods)
	for _, i := range pending {
		p, failedBefore := last[i]
		if until := p.Finished.Add(backoffDelay(int(p.IndexFailures + p.IndexIgnoredFailures + 1))); failedBefore && now.Before(until) {
			a.Requeue = earliest(a.Requeue, until)
			continue
		}
		if a.IndexFailures == nil {
			a.IndexFailures = map[int]IndexFailureCount{}
		}
		a.Create = append(a.Create, i)
		a.IndexFailures[i] = nextIndexFailureCount(job, p, failedBefore)
	}
}

// lastFailedPods is, by index, its failed pod with the most failures
// before it (the latest of those).
func lastFailedPods(job *batchv1.Job, pods []JobPod) map[int]JobPod {
	out := map[int]JobPod{}
	for _, p := range pods {
		if _, failed := p.outcome(false, onlyFailedPodsCount(job)); !failed || p.Index < 0 || p.Index >= completions(job) {
			continue
		}
		prev, seen := out[p.Index]
		if !seen || prev.IndexFailures+prev.IndexIgnoredFailures < p.IndexFailures+p.IndexIgnoredFailures ||
			(prev.IndexFailures+prev.IndexIgnoredFailures == p.IndexFailures+p.IndexIgnoredFailures && !p.Finished.Before(prev.Finished)) {
			out[p.Index] = p
		}
	}
	return out
}

// nextIndexFailureCount is the failure counts of the pod replacing a
// failed one: its counts, plus its failure, counted or ignored as the
// podFailurePolicy says.
func nextIndexFailureCount(job *batchv1.Job, replaced JobPod, failedBefore bool) IndexFailureCount {
	if !failedBefore {
		return IndexFailureCount{}
	}
	n := IndexFailureCount{Failed: replaced.IndexFailures, Ignored: replaced.IndexIgnoredFailures}
	if matchPodFailurePolicy(job, replaced).ignore {
		n.Ignored++
	} else {
		n.Failed++
	}
	return n
}

// SetJobPodIndexFailures writes an index's failure counts on its new pod,
// as the controller does: the failure count always, the ignored count
// when not zero.
func SetJobPodIndexFailures(pod *v1.Pod, n IndexFailureCount) {
	pod.Annotations = withLabel(pod.Annotations, batchv1.JobIndexFailureCountAnnotation, strconv.Itoa(int(n.Failed)))
	if n.Ignored > 0 {
		pod.Annotations = withLabel(pod.Annotations, batchv1.JobIndexIgnoredFailureCountAnnotation, strconv.Itoa(int(n.Ignored)))
	}
}

// JobPodIndexFailures reads a pod's index failure counts back; a missing,
// unparsable, negative or too large value counts 0, as the controller's.
func JobPodIndexFailures(pod *v1.Pod) IndexFailureCount {
	read := func(key string) int32 {
		n, err := strconv.ParseInt(pod.Annotations[key], 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return 0
		}
		return int32(n)
	}
	return IndexFailureCount{Failed: read(batchv1.JobIndexFailureCountAnnotation), Ignored: read(batchv1.JobIndexIgnoredFailureCountAnnotation)}
}
