package manifest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// Limits of a successPolicy, as the API server's.
const (
	maxSuccessPolicyRules          = 20
	maxSucceededIndexesLength      = 64 * 1024
	successPolicyRequiresIndexed   = "requires indexed completion mode"
	successPolicyRuleNeedsOneField = "at least one of succeededCount or succeededIndexes must be specified"
)

// validateSuccessPolicy checks a Job's successPolicy as the API server
// does: Indexed only, 1 to 20 rules, each with succeededIndexes (ordered
// intervals below completions) and/or succeededCount (not negative, at
// most completions and the number of succeededIndexes).
func validateSuccessPolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	policy := spec.SuccessPolicy
	if policy == nil {
		return nil
	}
	path = path.Child("successPolicy")
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		return field.ErrorList{field.Invalid(path, *policy, successPolicyRequiresIndexed)}
	}
	var errs field.ErrorList
	rules := path.Child("rules")
	if len(policy.Rules) == 0 {
		errs = append(errs, field.Required(rules, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(policy.Rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rules, len(policy.Rules), maxSuccessPolicyRules))
	}
	completions := int32(0)
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	for i := range policy.Rules {
		errs = append(errs, validateSuccessPolicyRule(&policy.Rules[i], completions, rules.Index(i))...)
	}
	return errs
}

func validateSuccessPolicyRule(rule *batchv1.SuccessPolicyRule, completions int32, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
		errs = append(errs, field.Required(path, successPolicyRuleNeedsOneField))
	}
	var total int32
	if rule.SucceededIndexes != nil {
		indexes := path.Child("succeededIndexes")
		if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
			errs = append(errs, field.TooLong(indexes, *rule.SucceededIndexes, maxSucceededIndexesLength))
		}
		var err error
		if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
			errs = append(errs, field.Invalid(indexes, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
		}
	}
	if rule.SucceededCount != nil {
		count := path.Child("succeededCount")
		errs = append(errs, nonNegative(int64(*rule.SucceededCount), count)...)
		if *rule.SucceededCount > completions {
			errs = append(errs, field.Invalid(count, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
		}
		if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
			errs = append(errs, field.Invalid(count, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
		}
	}
	return errs
}

// countIndexes checks an index list ("0,2-4") as the API server does —
// intervals in increasing order, each below completions — and counts its
// indexes.
func countIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, interval := range strings.Split(s, ",") {
		first, end, err := parseIndexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last >= first {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, first)
		}
		total += end - first + 1
		last = end
	}
	return total, nil
}

func parseIndexInterval(interval string, completions int32) (int32, int32, error) {
	parts := strings.Split(interval, "-")
	if len(parts) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", interval)
	}
	bounds := make([]int32, len(parts))
	for i, part := range parts {
		n, err := strconv.ParseInt(part, 10, 32)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", part)
		}
		if err != nil || n >= int64(completions) {
			return 0, 0, fmt.Errorf("too large index: %q", part)
		}
		bounds[i] = int32(n)
	}
	if len(bounds) == 1 {
		return bounds[0], bounds[0], nil
	}
	if bounds[0] >= bounds[1] {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", bounds[0], bounds[1])
	}
	return bounds[0], bounds[1], nil
}
