package manifest

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxFailedIndexesForIndexedJob caps maxFailedIndexes, as the API server.
const maxFailedIndexesForIndexedJob = 100000

// validateBackoffLimitPerIndex checks backoffLimitPerIndex and
// maxFailedIndexes as the API server does: not negative, maxFailedIndexes
// only with backoffLimitPerIndex and at most completions (and 100000),
// both only in Indexed completion mode.
func validateBackoffLimitPerIndex(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.BackoffLimitPerIndex != nil {
		errs = append(errs, nonNegative(int64(*spec.BackoffLimitPerIndex), path.Child("backoffLimitPerIndex"))...)
	}
	maxFailed := spec.MaxFailedIndexes
	if maxFailed != nil {
		errs = append(errs, nonNegative(int64(*maxFailed), path.Child("maxFailedIndexes"))...)
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(path.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if maxFailed != nil {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *maxFailed, "requires indexed completion mode"))
		}
		return errs
	}
	if maxFailed != nil && spec.Completions != nil && *maxFailed > *spec.Completions {
		errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *maxFailed, "must be less than or equal to completions"))
	}
	if maxFailed != nil && *maxFailed > maxFailedIndexesForIndexedJob {
		errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *maxFailed, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	return errs
}
