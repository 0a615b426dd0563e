package manifest

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Job is a decoded batch/v1 Job and the source it came from.
type Job struct {
	*batchv1.Job
	Source string `json:"source"`
}

// CronJob is a decoded batch/v1 CronJob and the source it came from.
type CronJob struct {
	*batchv1.CronJob
	Source string `json:"source"`
}

// The batch/v1 kinds berth reads.
const (
	batchV1     = "batch/v1"
	kindJob     = "Job"
	kindCronJob = "CronJob"
)

// setJobDefaults defaults a Job as the API server does (batch/v1):
// completions and parallelism 1 when both are unset, else parallelism 1;
// backoffLimit 6 (the largest int32 with backoffLimitPerIndex);
// completionMode NonIndexed; suspend false; podReplacementPolicy
// TerminatingOrFailed (Failed with a podFailurePolicy); the Job's labels
// from its template when it has none; the template's pod spec as a pod's.
func setJobDefaults(j *batchv1.Job) {
	if j.Namespace == "" {
		j.Namespace = metav1.NamespaceDefault
	}
	setJobSpecDefaults(&j.Spec)
	if len(j.Labels) == 0 && j.Spec.Template.Labels != nil {
		j.Labels = j.Spec.Template.Labels
	}
}

func setJobSpecDefaults(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptrTo(int32(1))
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptrTo(int32(1))
	}
	if spec.BackoffLimit == nil {
		limit := int32(6)
		if spec.BackoffLimitPerIndex != nil {
			limit = math.MaxInt32
		}
		spec.BackoffLimit = &limit
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptrTo(false)
	}
	if spec.PodReplacementPolicy == nil {
		policy := batchv1.TerminatingOrFailed
		if spec.PodFailurePolicy != nil {
			policy = batchv1.Failed
		}
		spec.PodReplacementPolicy = &policy
	}
	setPodFailurePolicyDefaults(spec)
	setFullPodSpecDefaults(&spec.Template.Spec)
}

// setCronJobDefaults defaults a CronJob as the API server does:
// concurrencyPolicy Allow, suspend false, successfulJobsHistoryLimit 3,
// failedJobsHistoryLimit 1; its jobTemplate's spec as a Job's (the Jobs
// made from it carry those defaults).
func setCronJobDefaults(cj *batchv1.CronJob) {
	if cj.Namespace == "" {
		cj.Namespace = metav1.NamespaceDefault
	}
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptrTo(int32(3))
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptrTo(int32(1))
	}
	setJobSpecDefaults(&s.JobTemplate.Spec)
}
