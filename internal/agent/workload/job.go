package workload

import (
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// Job back-off between pod re-creations after failures, as the job
// controller's: 10 s, doubling with each failure since the last success,
// at most 6 minutes.
const (
	JobBackoffBase = 10 * time.Second
	JobBackoffMax  = 6 * time.Minute
)

// Condition reasons and messages of the job controller.
const (
	JobReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	JobReasonDeadlineExceeded     = "DeadlineExceeded"
	JobReasonCompletionsReached   = "CompletionsReached"
	JobReasonSuspended            = "JobSuspended"
	JobReasonResumed              = "JobResumed"
	msgBackoffLimit               = "Job has reached the specified backoff limit"
	msgDeadline                   = "Job was active longer than specified deadline"
	msgCompletions                = "Reached expected number of succeeded pods"
)

// JobPod is what the job controller needs to know of one pod it owns.
type JobPod struct {
	Pod
	UID string
	// Counted says the Job's status already counts this finished pod
	// (the agent keeps the set, as the API server's finalizers would).
	Counted bool
	// Index is the pod's completion index (Indexed jobs), else -1.
	Index int
	// IndexFailures and IndexIgnoredFailures are its index's failures
	// before it, counted and ignored by the podFailurePolicy, from its
	// job-index-failure-count annotations (backoffLimitPerIndex).
	IndexFailures, IndexIgnoredFailures int32
	// Restarts is the sum of its containers' (init and regular) restart
	// counts, which the controller counts for restartPolicy OnFailure.
	Restarts int32
	// Finished is when a finished pod's last container ended.
	Finished time.Time
	// Exits are its containers that ended with a non-zero exit code,
	// regular containers first; Conditions its conditions' statuses
	// (for a podFailurePolicy).
	Exits      []ContainerExit
	Conditions map[v1.PodConditionType]v1.ConditionStatus
}

func (p JobPod) succeeded() bool { return p.Phase == v1.PodSucceeded }
func (p JobPod) failed() bool    { return p.Phase == v1.PodFailed }

// terminating is a pod being deleted that still runs.
func (p JobPod) terminating() bool { return p.Deleting && !p.succeeded() && !p.failed() }

// outcome is how the controller counts the pod: succeeded, failed (a pod
// deleted before it succeeded counts as failed, as with
// podReplacementPolicy TerminatingOrFailed, unless the Job is suspended),
// or neither yet.
func (p JobPod) outcome(suspended, onlyFailed bool) (succeeded, failed bool) {
	switch {
	case p.succeeded():
		return true, false
	case p.failed():
		return false, true
	}
	return false, p.Deleting && !suspended && !onlyFailed
}

// JobActions is what a Job's reconcile asks for.
type JobActions struct {
	// Create lists the pods to make: their completion indexes (Indexed),
	// else -1 for each pod.
	Create []int
	// IndexFailures are the job-index-failure-count annotations of the
	// pods to make of a Job with backoffLimitPerIndex, by index.
	IndexFailures map[int]IndexFailureCount
	// Delete names active pods to delete (excess, suspended, or the Job
	// failed).
	Delete []string
	Status batchv1.JobStatus
	Events []Event
	// Requeue is when to look again with nothing changed (back-off, the
	// active deadline, the TTL); zero when nothing is pending.
	Requeue time.Time
	// Expired says the Job finished ttlSecondsAfterFinished ago: it and
	// its pods are to be deleted.
	Expired bool
	// Counted lists the UIDs of the pods this pass counted in the status.
	Counted []string
}

// jobCounts is what the pods say.
type jobCounts struct {
	active, ready, terminating, succeeded, failed int32
	activePods                                    []JobPod
	succeededIndexes                              map[int]bool
	activeIndexes                                 map[int]bool
	// failedIndexes are the indexes past backoffLimitPerIndex or failed
	// by a FailIndex rule; terminatingIndexes those of terminating pods.
	failedIndexes      map[int]bool
	terminatingIndexes map[int]bool
	counted            []string
	// failJob is the message of a podFailurePolicy FailJob rule a newly
	// failed pod matched.
	failJob string
}

// countJobPods adds the pods not counted yet to the Job's succeeded and
// failed counts and completed indexes, and sorts the others.
func countJobPods(job *batchv1.Job, pods []JobPod) jobCounts {
	c := jobCounts{succeededIndexes: parseIndexes(job.Status.CompletedIndexes, completions(job)), activeIndexes: map[int]bool{},
		failedIndexes: map[int]bool{}, terminatingIndexes: map[int]bool{}}
	if job.Status.FailedIndexes != nil {
		c.failedIndexes = parseIndexes(*job.Status.FailedIndexes, completions(job))
	}
	c.succeeded, c.failed = job.Status.Succeeded, job.Status.Failed
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	for _, p := range pods {
		if s, f := p.outcome(suspended, onlyFailedPodsCount(job)); !p.Counted && (s || f) {
			c.count(job, p, s)
		}
		switch {
		case p.succeeded():
			if p.Index >= 0 && p.Index < completions(job) {
				c.succeededIndexes[p.Index] = true
			}
		case p.failed():
		case p.terminating():
			c.terminating++
			c.terminatingIndexes[p.Index] = true
		case !p.Deleting:
			c.active++
			c.activePods = append(c.activePods, p)
			if p.Index >= 0 {
				c.activeIndexes[p.Index] = true
			}
			if p.Ready {
				c.ready++
			}
		}
	}
	return c
}

// count adds a newly finished pod to the counts, as its Job's
// podFailurePolicy says for a failed one.
func (c *jobCounts) count(job *batchv1.Job, p JobPod, succeeded bool) {
	c.counted = append(c.counted, p.UID)
	if succeeded {
		c.succeeded++
		return
	}
	verdict := matchPodFailurePolicy(job, p)
	if verdict.failJob != "" && c.failJob == "" {
		c.failJob = verdict.failJob
	}
	if !verdict.ignore {
		c.failed++
	}
	if indexFailed(job, p, verdict) {
		c.failedIndexes[p.Index] = true
	}
}

// ReconcileJob compares the pods a Job owns with its completions and
// parallelism, as the job controller does: pods are made until
// completions succeed (or, without completions, until one does), at most
// parallelism at once, after the failure back-off; the Job fails when more
// pods failed than backoffLimit (restartPolicy Never) or its running pods'
// containers restarted backoffLimit times (OnFailure), or when it ran
// longer than activeDeadlineSeconds. A finished Job keeps its pods.
func ReconcileJob(job *batchv1.Job, pods []JobPod, now time.Time) JobActions {
	var a JobActions
	c := countJobPods(job, pods)
	st := job.Status.DeepCopy()
	st.Active, st.Ready, st.Terminating = c.active, &c.ready, &c.terminating
	st.Succeeded, st.Failed = c.succeeded, c.failed
	if indexed(job) {
		st.CompletedIndexes = formatIndexes(c.succeededIndexes, completions(job))
	}
	if perIndexBackoff(job) {
		failed := formatIndexes(c.failedIndexes, completions(job))
		st.FailedIndexes = &failed
	}
	a.Status, a.Counted = *st, c.counted
	if finishedCondition(st) != nil {
		a.Expired, a.Requeue = ttlExpired(job, st, now)
		return a
	}
	if met := findCondition(&a.Status, batchv1.JobSuccessCriteriaMet); met != nil && met.Status == v1.ConditionTrue {
		// Decided, suspended since or not: pods ended since are not failures.
		return completeJob(&a, c, met.Reason, met.Message, now)
	}
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		suspendJob(&a, c, now)
		return a
	}
	resumeJob(&a, now)
	if reason, message := jobFailure(job, &a.Status, c, now); reason != "" {
		return failJob(&a, c, reason, message, now)
	}
	if reason, message := jobSucceeded(job, c); reason != "" {
		return completeJob(&a, c, reason, message, now)
	}
	a.Requeue = deadlineOf(job, &a.Status)
	scaleJob(job, &a, c, pods, now)
	return a
}

// indexed says whether the Job's completionMode is Indexed.
func indexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func completions(job *batchv1.Job) int {
	if job.Spec.Completions == nil {
		return 0
	}
	return int(*job.Spec.Completions)
}

func parallelism(job *batchv1.Job) int {
	if job.Spec.Parallelism == nil {
		return 1
	}
	return int(*job.Spec.Parallelism)
}

// jobFailure says why the Job fails now, or "".
func jobFailure(job *batchv1.Job, st *batchv1.JobStatus, c jobCounts, now time.Time) (string, string) {
	if target := findCondition(st, batchv1.JobFailureTarget); target != nil {
		return target.Reason, target.Message
	}
	if c.failJob != "" {
		return JobReasonPodFailurePolicy, c.failJob
	}
	limit := int32(6)
	if job.Spec.BackoffLimit != nil {
		limit = *job.Spec.BackoffLimit
	}
	if c.failed > limit || pastBackoffLimitOnFailure(job, c.activePods, limit) {
		return JobReasonBackoffLimitExceeded, msgBackoffLimit
	}
	if d := deadlineOf(job, st); !d.IsZero() && !now.Before(d) {
		return JobReasonDeadlineExceeded, msgDeadline
	}
	return failedIndexesFailure(job, c)
}

// pastBackoffLimitOnFailure counts, as the controller does, the container
// restarts of the running and pending pods of an OnFailure Job.
func pastBackoffLimitOnFailure(job *batchv1.Job, active []JobPod, limit int32) bool {
	if job.Spec.Template.Spec.RestartPolicy != v1.RestartPolicyOnFailure {
		return false
	}
	restarts := int32(0)
	for _, p := range active {
		restarts += p.Restarts
	}
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

// deadlineOf is when the Job's activeDeadlineSeconds passes, or zero.
func deadlineOf(job *batchv1.Job, st *batchv1.JobStatus) time.Time {
	if job.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil {
		return time.Time{}
	}
	return st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second)
}

// jobSucceeded says why the Job succeeded, or "": a successPolicy rule is
// met, or every index (Indexed), completions pods, or, without
// completions, one pod succeeded.
func jobSucceeded(job *batchv1.Job, c jobCounts) (string, string) {
	if message, met := matchSuccessPolicy(job, c.succeededIndexes); met {
		return JobReasonSuccessPolicy, message
	}
	var done bool
	switch {
	case job.Spec.Completions == nil:
		done = c.succeeded > 0 && c.active == 0 // the others finish first
	case indexed(job):
		done = len(c.succeededIndexes) >= completions(job)
	default:
		done = int(c.succeeded) >= completions(job)
	}
	if done {
		return JobReasonCompletionsReached, msgCompletions
	}
	return "", ""
}

// JobPodName is a new name for a pod of the Job: "<job>-<5 characters>",
// or "<job>-<index>-<5 characters>" for an Indexed Job's.
func JobPodName(job string, index int) string {
	if index < 0 {
		return PodName(job)
	}
	return PodName(job + "-" + strconv.Itoa(index))
}

// activePodsByRank orders active pods as the controller deletes them.
func activePodsByRank(pods []JobPod) []JobPod {
	out := append([]JobPod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		x, y := out[i], out[j]
		switch {
		case x.Ready != y.Ready:
			return !x.Ready
		case !x.Created.Equal(y.Created):
			return x.Created.After(y.Created)
		}
		return x.Name < y.Name
	})
	return out
}
