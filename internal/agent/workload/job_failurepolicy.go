package workload

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// JobReasonPodFailurePolicy is the reason of a Job a FailJob rule failed.
const JobReasonPodFailurePolicy = "PodFailurePolicy"

// ContainerExit is a container of a pod that ended with a non-zero code.
type ContainerExit struct {
	Name string
	Code int32
}

// failurePolicyVerdict is what a Job's podFailurePolicy says of a failed
// pod: count it (no rule matched, or Count), ignore it, fail its index
// (FailIndex, counted too) or fail the Job with a message.
type failurePolicyVerdict struct {
	ignore    bool
	failIndex bool
	failJob   string
}

// matchPodFailurePolicy applies the Job's rules, in order, to a failed
// pod, as the job controller does: the first rule matching one of its
// containers' non-zero exit codes (regular containers before init ones)
// or one of its conditions decides.
func matchPodFailurePolicy(job *batchv1.Job, p JobPod) failurePolicyVerdict {
	policy := job.Spec.PodFailurePolicy
	if policy == nil {
		return failurePolicyVerdict{}
	}
	for i, rule := range policy.Rules {
		var what string
		switch {
		case rule.OnExitCodes != nil:
			exit, ok := matchExitCodes(p.Exits, rule.OnExitCodes)
			if !ok {
				continue
			}
			what = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d", exit.Name, job.Namespace, p.Name, exit.Code, rule.Action, i)
		case len(rule.OnPodConditions) > 0:
			cond, ok := matchPodConditions(p.Conditions, rule.OnPodConditions)
			if !ok {
				continue
			}
			what = fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", job.Namespace, p.Name, cond, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionIgnore:
			return failurePolicyVerdict{ignore: true}
		case batchv1.PodFailurePolicyActionFailJob:
			return failurePolicyVerdict{failJob: what}
		case batchv1.PodFailurePolicyActionFailIndex:
			return failurePolicyVerdict{failIndex: true}
		}
		return failurePolicyVerdict{}
	}
	return failurePolicyVerdict{}
}

func matchExitCodes(exits []ContainerExit, req *batchv1.PodFailurePolicyOnExitCodesRequirement) (ContainerExit, bool) {
	for _, e := range exits {
		if req.ContainerName != nil && *req.ContainerName != e.Name {
			continue
		}
		in := slices.Contains(req.Values, e.Code)
		if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) == in {
			return e, true
		}
	}
	return ContainerExit{}, false
}

func matchPodConditions(conditions map[v1.PodConditionType]v1.ConditionStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) (v1.PodConditionType, bool) {
	for _, pat := range patterns {
		if status, found := conditions[pat.Type]; found && status == pat.Status {
			return pat.Type, true
		}
	}
	return "", false
}

// onlyFailedPodsCount says whether the Job counts and replaces a pod only
// once it failed (podReplacementPolicy Failed, the default with a
// podFailurePolicy), not while it terminates.
func onlyFailedPodsCount(job *batchv1.Job) bool {
	return job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed
}
