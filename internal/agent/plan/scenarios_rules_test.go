package plan

import v1 "k8s.io/api/core/v1"

// Container restart rules (KEP-5307): a container's own restartPolicy and
// restartPolicyRules override the pod's restartPolicy for that container.

func withPolicy(c v1.Container, policy v1.ContainerRestartPolicy) v1.Container {
	c.RestartPolicy = &policy
	return c
}

// withRule adds a rule with action on exit codes op values; a container with rules
// needs its own restartPolicy (validation), Never unless it has one.
func withRule(c v1.Container, action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, values ...int32) v1.Container {
	if c.RestartPolicy == nil {
		c = withPolicy(c, v1.ContainerRestartPolicyNever)
	}
	c.RestartPolicyRules = append(c.RestartPolicyRules, v1.ContainerRestartRule{
		Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: values},
	})
	return c
}

const (
	cNever     = v1.ContainerRestartPolicyNever
	cOnFailure = v1.ContainerRestartPolicyOnFailure
	cAlways    = v1.ContainerRestartPolicyAlways
	restart    = v1.ContainerRestartRuleActionRestart
	opIn       = v1.ContainerRestartRuleOnExitCodesOpIn
	opNotIn    = v1.ContainerRestartRuleOnExitCodesOpNotIn
)

func ruleScenarios() []scenario {
	ready := sandboxes(sb("sb0", 0, true))
	return []scenario{{
		name: "rules_own_never_in_always_pod",
		desc: "a container with restartPolicy Never in an Always pod stays exited; the other one keeps the pod",
		pod:  newPod(always, nil, withPolicy(ctr("once"), cNever), ctr("app")),
		obs: observed(ready,
			exited("c-once", "sb0", "once", 0, 0, 1), running("c-app", "sb0", "app", 0, 1)),
	}, {
		name: "rules_own_never_all_exited",
		desc: "every container has restartPolicy Never and exited: the Always pod is done",
		pod:  newPod(always, nil, withPolicy(ctr("once"), cNever), withPolicy(ctr("twice"), cNever)),
		obs: observed(ready,
			exited("c-once", "sb0", "once", 0, 0, 1), exited("c-twice", "sb0", "twice", 3, 0, 1)),
	}, {
		name: "rules_restart_on_42",
		desc: "a Restart rule on exit code 42 (In) restarts the container that exited 42",
		pod:  newPod(never, nil, withRule(ctr("app"), restart, opIn, 42), ctr("log")),
		obs: observed(ready,
			exited("c-app", "sb0", "app", 42, 0, 1), running("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "rules_no_match_falls_back",
		desc: "exit code 1 matches no rule: the container's own Never keeps it exited",
		pod:  newPod(always, nil, withRule(ctr("app"), restart, opIn, 42), ctr("log")),
		obs: observed(ready,
			exited("c-app", "sb0", "app", 1, 0, 1), running("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "rules_not_in",
		desc: "NotIn [0, 1]: exit code 7 matches, the container restarts under a Never pod",
		pod:  newPod(never, nil, withRule(ctr("app"), restart, opNotIn, 0, 1), ctr("log")),
		obs: observed(ready,
			exited("c-app", "sb0", "app", 7, 2, 1), running("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "rules_own_onfailure_in_never_pod",
		desc: "restartPolicy OnFailure in a Never pod: the failed container restarts",
		pod:  newPod(never, nil, withPolicy(ctr("app"), cOnFailure), ctr("log")),
		obs: observed(ready,
			exited("c-app", "sb0", "app", 2, 0, 1), running("c-log", "sb0", "log", 0, 1)),
	}, {
		name: "rules_own_always_in_never_pod",
		desc: "restartPolicy Always in a Never pod: the container restarts after exiting 0",
		pod:  newPod(never, nil, withPolicy(ctr("app"), cAlways)),
		obs:  observed(ready, exited("c-app", "sb0", "app", 0, 0, 1)),
	}, {
		name: "rules_init_onfailure_in_never_pod",
		desc: "an init container with restartPolicy OnFailure in a Never pod is restarted after failing",
		pod:  newPod(never, inits(withPolicy(ctr("setup"), cOnFailure)), ctr("app")),
		obs:  observed(ready, exited("c-setup", "sb0", "setup", 1, 0, 1)),
	}, {
		name: "rules_init_never_in_always_pod",
		desc: "an init container with restartPolicy Never failed: the Always pod is done",
		pod:  newPod(always, inits(withPolicy(ctr("setup"), cNever)), ctr("app")),
		obs:  observed(ready, exited("c-setup", "sb0", "setup", 1, 0, 1)),
	}, {
		name: "rules_init_rule_restarts",
		desc: "an init container with restartPolicy Never and a Restart rule on 75 is restarted after exiting 75",
		pod:  newPod(never, inits(withRule(ctr("setup"), restart, opIn, 75)), ctr("app")),
		obs:  observed(ready, exited("c-setup", "sb0", "setup", 75, 0, 1)),
	}, {
		name:   "rules_liveness_own_never",
		desc:   "liveness failed on a container with restartPolicy Never in an Always pod: killed, not restarted",
		pod:    newPod(always, nil, withLivenessProbe(withPolicy(ctr("app"), cNever)), ctr("log")),
		obs:    observed(ready, running("c-app", "sb0", "app", 0, 1), running("c-log", "sb0", "log", 0, 1)),
		probes: map[string]ProbeStatus{"app": {ContainerID: "c-app", LivenessFailed: true}},
	}, {
		name: "rules_new_sandbox_own_onfailure_succeeded",
		desc: "new sandbox in an Always pod: the container with restartPolicy OnFailure that succeeded is not started again",
		pod:  newPod(always, nil, withPolicy(ctr("once"), cOnFailure), ctr("app")),
		obs: observed(sandboxes(sb("sb0", 0, false)),
			exited("c-once", "sb0", "once", 0, 0, 1), exited("c-app", "sb0", "app", 137, 0, 1)),
	}}
}
