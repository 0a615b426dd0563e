package workload

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// JobReasonSuccessPolicy is the reason of the SuccessCriteriaMet and
// Complete conditions of a Job a successPolicy rule completed.
const JobReasonSuccessPolicy = batchv1.JobReasonSuccessPolicy

// matchSuccessPolicy applies an Indexed Job's successPolicy, as the job
// controller does: the first rule met decides, with the message "Matched
// rules at index <i>". A rule with succeededIndexes is met when they all
// succeeded, or succeededCount of them; one with only succeededCount when
// that many indexes succeeded. A rule whose indexes do not parse (or lie
// beyond completions) is skipped.
func matchSuccessPolicy(job *batchv1.Job, succeeded map[int]bool) (string, bool) {
	if !indexed(job) || job.Spec.SuccessPolicy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range job.Spec.SuccessPolicy.Rules {
		if rule.SucceededIndexes == nil {
			if rule.SucceededCount != nil && len(succeeded) >= int(*rule.SucceededCount) {
				return fmt.Sprintf("Matched rules at index %d", i), true
			}
			continue
		}
		required := parseIndexes(*rule.SucceededIndexes, completions(job))
		if len(required) == 0 {
			continue
		}
		done := 0
		for index := range required {
			if succeeded[index] {
				done++
			}
		}
		if done == len(required) || (rule.SucceededCount != nil && done >= int(*rule.SucceededCount)) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
