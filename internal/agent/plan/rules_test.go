package plan

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestMatchRule(t *testing.T) {
	c := withRule(withRule(ctr("app"), restart, opIn, 42, 43), ActionRestartAllContainers, opNotIn, 0, 1)
	c.RestartPolicyRules = append([]v1.ContainerRestartRule{{Action: restart}}, c.RestartPolicyRules...) // no exitCodes: never matches
	cases := []struct {
		code   int32
		match  bool
		action v1.ContainerRestartRuleAction
	}{
		{42, true, restart}, {43, true, restart}, // the first matching rule wins
		{7, true, ActionRestartAllContainers}, {0, false, ""}, {1, false, ""},
	}
	for _, tc := range cases {
		rule, ok := MatchRule(&c, tc.code)
		if ok != tc.match || rule.Action != tc.action {
			t.Errorf("exit %d: rule %+v, %v; want %q, %v", tc.code, rule, ok, tc.action, tc.match)
		}
	}
	odd := withRule(ctr("app"), restart, "Between", 1, 2)
	if _, ok := MatchRule(&odd, 1); ok {
		t.Errorf("an unknown operator matched")
	}
}

func TestContainerShouldRestart(t *testing.T) {
	cases := []struct {
		name string
		pod  v1.RestartPolicy
		c    v1.Container
		code int32
		want bool
	}{
		{"pod Always", always, ctr("a"), 0, true},
		{"pod default", "", ctr("a"), 0, true},
		{"pod OnFailure, 0", onFailure, ctr("a"), 0, false},
		{"pod OnFailure, 1", onFailure, ctr("a"), 1, true},
		{"pod Never", never, ctr("a"), 1, false},
		{"own Never in Always", always, withPolicy(ctr("a"), cNever), 1, false},
		{"own Always in Never", never, withPolicy(ctr("a"), cAlways), 0, true},
		{"own OnFailure, 0", always, withPolicy(ctr("a"), cOnFailure), 0, false},
		{"own OnFailure, 2", never, withPolicy(ctr("a"), cOnFailure), 2, true},
		{"Restart rule matches", always, withRule(ctr("a"), restart, opIn, 42), 42, true},
		{"Restart rule misses: own Never", always, withRule(ctr("a"), restart, opIn, 42), 41, false},
		{"RestartAllContainers rule matches", never, withRule(ctr("a"), ActionRestartAllContainers, opIn, 42), 42, true},
		{"unknown action: own policy", always, withRule(withPolicy(ctr("a"), cOnFailure), "Pause", opIn, 3), 0, false},
		{"rules without own policy are not looked at", never, func() v1.Container {
			c := withRule(ctr("a"), restart, opIn, 42)
			c.RestartPolicy = nil
			return c
		}(), 42, false},
	}
	for _, tc := range cases {
		spec := v1.PodSpec{RestartPolicy: tc.pod}
		if got := ContainerShouldRestart(&tc.c, &spec, tc.code); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRestartsAfterKillAndRunsOnce(t *testing.T) {
	pod := func(p v1.RestartPolicy) *v1.Pod { return newPod(p, nil) }
	own := withRule(withPolicy(ctr("a"), cOnFailure), restart, opIn, 1)
	never := withPolicy(ctr("a"), cNever)
	plain := ctr("a")
	if !restartsAfterKill(&own, pod(v1.RestartPolicyNever)) || restartsAfterKill(&never, pod(always)) ||
		restartsAfterKill(&plain, pod(v1.RestartPolicyNever)) || !restartsAfterKill(&plain, pod(onFailure)) {
		t.Errorf("restartsAfterKill: own policy first (anything but Never), else the pod's")
	}
	if !runsOnce(&own, pod(always)) || runsOnce(&never, pod(onFailure)) || !runsOnce(&plain, pod(onFailure)) || runsOnce(&plain, pod(always)) {
		t.Errorf("runsOnce: own OnFailure, else the pod's OnFailure")
	}
}

func TestRestartAllHelpers(t *testing.T) {
	source := withRule(ctr("app"), ActionRestartAllContainers, opIn, 42)
	pod := newPod(always, inits(ctr("setup")), source, ctr("log"))
	if !AllContainersCouldRestart(&pod.Spec) || AllContainersCouldRestart(&newPod(always, nil, withRule(ctr("a"), restart, opIn, 1)).Spec) {
		t.Errorf("AllContainersCouldRestart: only a RestartAllContainers rule counts")
	}
	o := observed(sandboxes(sb("sb0", 0, true)),
		exited("c-setup", "sb0", "setup", 0, 0, 1),
		exited("c-app-0", "sb0", "app", 42, 0, 2), running("c-log", "sb0", "log", 0, 2))
	if got := RestartAllTriggered(pod, o); got != "app" {
		t.Errorf("triggered by %q; want app", got)
	}
	o.Containers = append(o.Containers, running("c-app-1", "sb0", "app", 1, 3))
	if got := RestartAllTriggered(pod, o); got != "" {
		t.Errorf("a newer running instance: triggered by %q; want none", got)
	}
	if RestartAllCleanedUp(pod, o) || !RestartAllCleanedUp(pod, observed(o.Sandboxes)) {
		t.Errorf("RestartAllCleanedUp: true only without any instance")
	}
}
