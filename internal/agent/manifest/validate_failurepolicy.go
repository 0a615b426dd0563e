package manifest

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of a podFailurePolicy, as the API server's.
const (
	maxPodFailurePolicyRules = 20
	maxExitCodeValues        = 255
	maxPodConditionPatterns  = 20
)

// validatePodFailurePolicy checks a Job's podFailurePolicy as the API
// server does: restartPolicy Never, at most 20 rules, each with a known
// action (FailIndex needs backoffLimitPerIndex) and exactly one of onExitCodes (In or NotIn, 1 to 255 values, sorted,
// unique, no 0 with In) and onPodConditions.
func validatePodFailurePolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	policy := spec.PodFailurePolicy
	if policy == nil {
		return nil
	}
	var errs field.ErrorList
	if spec.Template.Spec.RestartPolicy != v1.RestartPolicyNever {
		errs = append(errs, field.Invalid(path.Child("template", "spec", "restartPolicy"), spec.Template.Spec.RestartPolicy, `only "Never" is supported when podFailurePolicy is specified`))
	}
	rules := path.Child("podFailurePolicy", "rules")
	if len(policy.Rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rules, len(policy.Rules), maxPodFailurePolicyRules))
	}
	for i := range policy.Rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &policy.Rules[i], rules.Index(i))...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("action"), rule.Action, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex)
	if rule.Action == batchv1.PodFailurePolicyActionFailIndex && spec.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Invalid(path.Child("action"), rule.Action, "requires the backoffLimitPerIndex to be set"))
	}
	switch {
	case (rule.OnExitCodes == nil) == (len(rule.OnPodConditions) == 0):
		return append(errs, field.Invalid(path, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	case rule.OnExitCodes != nil:
		return append(errs, validateOnExitCodes(rule.OnExitCodes, path.Child("onExitCodes"))...)
	}
	conds := path.Child("onPodConditions")
	if len(rule.OnPodConditions) > maxPodConditionPatterns {
		errs = append(errs, field.TooMany(conds, len(rule.OnPodConditions), maxPodConditionPatterns))
	}
	for i, p := range rule.OnPodConditions {
		errs = append(errs, validateEnum(conds.Index(i).Child("status"), p.Status, v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown)...)
		if p.Type == "" {
			errs = append(errs, field.Required(conds.Index(i).Child("type"), ""))
		}
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("operator"), req.Operator, batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	values := path.Child("values")
	switch n := len(req.Values); {
	case n == 0:
		errs = append(errs, field.Invalid(values, req.Values, "at least one value is required"))
	case n > maxExitCodeValues:
		errs = append(errs, field.TooMany(values, n, maxExitCodeValues))
	}
	for i, v := range req.Values {
		switch {
		case req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0:
			errs = append(errs, field.Invalid(values.Index(i), v, "must not be 0 for the In operator"))
		case i > 0 && req.Values[i-1] == v:
			errs = append(errs, field.Duplicate(values.Index(i), v))
		case i > 0 && req.Values[i-1] > v:
			errs = append(errs, field.Invalid(values.Index(i), v, "must be ordered"))
		}
	}
	return errs
}

// setPodFailurePolicyDefaults sets onPodConditions' status to True where
// unset, as the API server does.
func setPodFailurePolicyDefaults(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy == nil {
		return
	}
	for i := range spec.PodFailurePolicy.Rules {
		for j := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
			if p := &spec.PodFailurePolicy.Rules[i].OnPodConditions[j]; p.Status == "" {
				p.Status = v1.ConditionTrue
			}
		}
	}
}
