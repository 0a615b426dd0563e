package manifest

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// The API server's limits on container restart rules.
const (
	maxRestartRules    = 20
	maxRestartExitCode = 255 // values of one rule's exitCodes
)

// The values the API server accepts, sorted as it lists them in its errors.
var (
	containerRestartPolicies = []v1.ContainerRestartPolicy{
		v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure,
	}
	restartRuleActions   = []v1.ContainerRestartRuleAction{v1.ContainerRestartRuleActionRestart, plan.ActionRestartAllContainers}
	restartRuleOperators = []v1.ContainerRestartRuleOnExitCodesOperator{
		v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn,
	}
)

// validateInitRestartPolicy checks an init container's restartPolicy and
// restartPolicyRules as the API server 1.37 does (ContainerRestartRules and
// RestartAllContainersOnContainerExits on by default): rules need a
// restartPolicy; any policy may have rules, sidecars (Always) too.
func validateInitRestartPolicy(c *v1.Container, path *field.Path) field.ErrorList {
	if c.RestartPolicy == nil {
		if len(c.RestartPolicyRules) > 0 {
			return field.ErrorList{field.Required(path.Child("restartPolicy"), "must specify restartPolicy when restart rules are used")}
		}
		return nil
	}
	return validateContainerRestartPolicy(c, path)
}

// validateContainerRestartPolicy checks a container's restartPolicy (Always,
// OnFailure or Never; required once rules are given) and its rules: at
// most 20, each with action Restart or RestartAllContainers and exitCodes
// (operator In or NotIn, at most 255 values), as the API server's
// validateContainerRestartPolicy.
func validateContainerRestartPolicy(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	policyPath := path.Child("restartPolicy")
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) == 0:
		return nil
	case c.RestartPolicy == nil:
		errs = append(errs, field.Required(policyPath, "must specify restartPolicy when restart rules are used"))
	case !slices.Contains(containerRestartPolicies, *c.RestartPolicy):
		errs = append(errs, field.NotSupported(policyPath, *c.RestartPolicy, containerRestartPolicies))
	}
	rulesPath := path.Child("restartPolicyRules")
	if len(c.RestartPolicyRules) > maxRestartRules {
		errs = append(errs, field.TooMany(rulesPath, len(c.RestartPolicyRules), maxRestartRules))
	}
	for i, rule := range c.RestartPolicyRules {
		rulePath := rulesPath.Index(i)
		if !slices.Contains(restartRuleActions, rule.Action) {
			errs = append(errs, field.NotSupported(rulePath.Child("action"), rule.Action, restartRuleActions))
		}
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(rulePath.Child("exitCodes"), "must be specified"))
			continue
		}
		codesPath := rulePath.Child("exitCodes")
		if !slices.Contains(restartRuleOperators, rule.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(codesPath.Child("operator"), rule.ExitCodes.Operator, restartRuleOperators))
		}
		if len(rule.ExitCodes.Values) > maxRestartExitCode {
			errs = append(errs, field.TooMany(codesPath.Child("values"), len(rule.ExitCodes.Values), maxRestartExitCode))
		}
	}
	return errs
}
