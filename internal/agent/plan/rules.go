package plan

import v1 "k8s.io/api/core/v1"

// ActionRestartAllContainers is the restart rule action of KEP-5532 (beta and on by
// default since 1.36): the container's exit restarts every init and regular container
// of the pod in place, in its sandbox. The API types this agent builds against name only
// ContainerRestartRuleActionRestart.
const ActionRestartAllContainers v1.ContainerRestartRuleAction = "RestartAllContainers"

// MatchRule returns the first of c's restartPolicyRules whose exitCodes match exitCode
// (operator In: the code is one of the values; NotIn: it is none of them), as kubelet's
// FindMatchingContainerRestartRule. Rules without exitCodes or with another operator
// never match.
func MatchRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		listed := false
		for _, v := range rule.ExitCodes.Values {
			listed = listed || v == exitCode
		}
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if listed {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !listed {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// ContainerShouldRestart is kubelet's ContainerShouldRestart (KEP-5307, beta and on by
// default since 1.35): whether container c of a pod with spec, exited with exitCode, is
// restarted. A container with its own restartPolicy has its restartPolicyRules looked
// at first (a matching Restart or RestartAllContainers rule restarts it), then its own
// policy (Always; OnFailure: a non-zero code; Never: no); one without falls back on the
// pod's restartPolicy.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := MatchRule(c, exitCode); ok &&
			(rule.Action == v1.ContainerRestartRuleActionRestart || rule.Action == ActionRestartAllContainers) {
			return true
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	}
	return true
}

// restartsAfterKill is whether a container that is killed while it runs (a failed
// liveness or startup probe) or whose state is unknown is restarted: no exit code to
// match rules against, so its own restartPolicy decides (anything but Never), else the
// pod's (anything but Never), as kubelet does.
func restartsAfterKill(c *v1.Container, pod *v1.Pod) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// runsOnce is whether a regular container that succeeded is left alone when the pod
// gets a new sandbox: its own restartPolicy OnFailure, or, without one, the pod's.
// kubelet does not look at rules, nor at a container's own Never, there.
func runsOnce(c *v1.Container, pod *v1.Pod) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy == v1.ContainerRestartPolicyOnFailure
	}
	return pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure
}

// AllContainersCouldRestart is kubelet's AllContainersCouldRestart: whether any init or
// regular container has a rule with action RestartAllContainers. Only such pods get the
// AllContainersRestarting condition.
func AllContainersCouldRestart(spec *v1.PodSpec) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, rule := range list[i].RestartPolicyRules {
				if rule.Action == ActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// restartAllSource reports whether container c's instance triggers a restart of every
// container: it exited with a code that matches a RestartAllContainers rule of c.
func restartAllSource(c *v1.Container, inst *Container) bool {
	if inst == nil || inst.State != StateExited {
		return false
	}
	rule, ok := MatchRule(c, inst.ExitCode)
	return ok && rule.Action == ActionRestartAllContainers
}

// RestartAllTriggered is the runtime side of kubelet's ShouldAllContainersRestart: the
// newest instance (in any sandbox) of an init or regular container exited with a code
// that matches one of its RestartAllContainers rules. It returns that container's name
// ("" when none).
func RestartAllTriggered(pod *v1.Pod, o Observed) string {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if is := o.Instances(c.Name); len(is) > 0 && restartAllSource(c, &is[0]) {
				return c.Name
			}
		}
	}
	return ""
}

// RestartAllCleanedUp is kubelet's AllContainersRestartCleanedUp: no init or regular
// container of the pod has an instance left in the runtime.
func RestartAllCleanedUp(pod *v1.Pod, o Observed) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if len(o.Instances(c.Name)) > 0 {
				return false
			}
		}
	}
	return true
}
