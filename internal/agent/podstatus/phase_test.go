package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

func TestPhase(t *testing.T) {
	sb := sandboxes(ready("sb0"))
	backoff := map[string]Waiting{"app": {Reason: "CrashLoopBackOff", Message: "back-off 10s"}}
	cases := []struct {
		name     string
		in       Input
		terminal bool
		want     v1.PodPhase
	}{
		{"nothing yet", input(newPod(v1.RestartPolicyAlways, nil, ctr("app")), observed(nil)), false, v1.PodPending},
		{"init running", input(newPod(v1.RestartPolicyAlways, inits(ctr("setup")), ctr("app")),
			observed(sb, running("i", "sb0", "setup", 0, 1))), false, v1.PodPending},
		{"init failed never", input(newPod(v1.RestartPolicyNever, inits(ctr("setup")), ctr("app")),
			observed(sb, exited("i", "sb0", "setup", 1, 0, 1))), false, v1.PodFailed},
		{"init failed always", input(newPod(v1.RestartPolicyAlways, inits(ctr("setup")), ctr("app")),
			observed(sb, exited("i", "sb0", "setup", 1, 0, 1))), false, v1.PodPending},
		{"init done, regular not created", input(newPod(v1.RestartPolicyAlways, inits(ctr("setup")), ctr("app")),
			observed(sb, exited("i", "sb0", "setup", 0, 0, 1))), false, v1.PodPending},
		{"running", input(newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			observed(sb, running("a", "sb0", "app", 0, 1))), false, v1.PodRunning},
		{"one running one not created", input(newPod(v1.RestartPolicyAlways, nil, ctr("app"), ctr("log")),
			observed(sb, running("a", "sb0", "app", 0, 1))), false, v1.PodPending},
		{"never exit 0", input(newPod(v1.RestartPolicyNever, nil, ctr("app")),
			observed(sb, exited("a", "sb0", "app", 0, 0, 1))), false, v1.PodSucceeded},
		{"never exit 1", input(newPod(v1.RestartPolicyNever, nil, ctr("app")),
			observed(sb, exited("a", "sb0", "app", 1, 0, 1))), false, v1.PodFailed},
		{"never one failed one running", input(newPod(v1.RestartPolicyNever, nil, ctr("app"), ctr("log")),
			observed(sb, exited("a", "sb0", "app", 1, 0, 1), running("l", "sb0", "log", 0, 1))), false, v1.PodRunning},
		{"always exit 0 restarting", input(newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			observed(sb, exited("a", "sb0", "app", 0, 0, 1))), false, v1.PodRunning},
		{"always exit 0 terminal", input(newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			observed(sb, exited("a", "sb0", "app", 0, 0, 1))), true, v1.PodSucceeded},
		{"always exit 1 terminal", input(newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			observed(sb, exited("a", "sb0", "app", 1, 0, 1))), true, v1.PodFailed},
		{"onfailure exit 1 restarting", input(newPod(v1.RestartPolicyOnFailure, nil, ctr("app")),
			observed(sb, exited("a", "sb0", "app", 1, 0, 1))), false, v1.PodRunning},
		{"onfailure all exit 0", input(newPod(v1.RestartPolicyOnFailure, nil, ctr("app"), ctr("log")),
			observed(sb, exited("a", "sb0", "app", 0, 0, 1), exited("l", "sb0", "log", 0, 0, 1))), false, v1.PodSucceeded},
		{"crash loop under always", Input{Pod: newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			Observed: observed(sb, exited("a", "sb0", "app", 1, 3, 1)), Waiting: backoff}, false, v1.PodRunning},
		{"image pull error", Input{Pod: newPod(v1.RestartPolicyAlways, nil, ctr("app")),
			Observed: observed(sb), Waiting: map[string]Waiting{"app": {Reason: "ErrImagePull"}}}, false, v1.PodPending},
		{"sidecar not started yet", input(newPod(v1.RestartPolicyAlways, inits(withStartup(side("proxy"))), ctr("app")),
			observed(sb, running("p", "sb0", "proxy", 0, 1))), false, v1.PodPending},
		{"sidecar running, job done, sidecar not yet killed", input(newPod(v1.RestartPolicyNever, inits(side("proxy")), ctr("job")),
			observed(sb, running("p", "sb0", "proxy", 0, 1), exited("j", "sb0", "job", 0, 0, 2))), false, v1.PodRunning},
		{"sidecar killed, job done", input(newPod(v1.RestartPolicyNever, inits(side("proxy")), ctr("job")),
			observed(sb, exited("p", "sb0", "proxy", 137, 0, 1), exited("j", "sb0", "job", 0, 0, 2))), false, v1.PodSucceeded},
		{"sidecar restarting after initialization", Input{
			Pod: newPod(v1.RestartPolicyAlways, inits(withStartup(side("proxy"))), ctr("app")),
			Observed: observed(sb, running("p2", "sb0", "proxy", 1, 5), exited("p1", "sb0", "proxy", 1, 0, 1),
				running("a", "sb0", "app", 0, 2))}, false, v1.PodRunning},
	}
	for _, tc := range cases {
		tc.in.Terminal = tc.terminal
		if tc.in.Now.IsZero() {
			tc.in.Now = now
		}
		if got := Compute(tc.in).Phase; got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestTerminalPhaseIsKept(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, nil, ctr("app"))
	in := input(pod, observed(sandboxes(ready("sb0")), exited("a", "sb0", "app", 0, 0, 1)))
	first := Compute(in)
	if first.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s", first.Phase)
	}
	// The runtime lost the container (removed): computed alone this would be Pending.
	in.Observed = observed(sandboxes(ready("sb0")))
	in.Previous = &first
	if got := Compute(in).Phase; got != v1.PodSucceeded {
		t.Errorf("left a terminal phase: %s", got)
	}
	in.Previous = nil
	pod.Status.Phase = v1.PodFailed
	if got := Compute(in).Phase; got != v1.PodFailed {
		t.Errorf("applied terminal phase not kept: %s", got)
	}
	// The applied pod's terminal phase wins over a different computed terminal phase.
	in.Observed = observed(sandboxes(ready("sb0")), exited("a", "sb0", "app", 0, 0, 1))
	if got := Compute(in).Phase; got != v1.PodFailed {
		t.Errorf("applied Failed became %s", got)
	}
}

func TestPhaseReasonKeptWhilePhaseStays(t *testing.T) {
	in := input(newPod(v1.RestartPolicyAlways, nil, ctr("app")),
		observed(sandboxes(ready("sb0")), running("a", "sb0", "app", 0, 1)))
	in.Previous = &v1.PodStatus{Phase: v1.PodRunning, Reason: "Because", Message: "so"}
	if s := Compute(in); s.Reason != "Because" || s.Message != "so" {
		t.Errorf("reason %q message %q", s.Reason, s.Message)
	}
	in.Previous.Phase = v1.PodPending
	if s := Compute(in); s.Reason != "" {
		t.Errorf("reason kept across a phase change: %q", s.Reason)
	}
}

// Container restart rules: a container's own restartPolicy and rules decide whether it
// is restarted, and so the phase of a pod whose containers all stopped.
func TestPhaseWithContainerRestartRules(t *testing.T) {
	sb := sandboxes(ready("sb0"))
	never, onFailure := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure
	restart := v1.ContainerRestartRuleActionRestart
	cases := []struct {
		name string
		pod  *v1.Pod
		obs  plan.Observed
		want v1.PodPhase
	}{
		{"own Never in an Always pod, exited 1", newPod(v1.RestartPolicyAlways, nil, withPolicy(ctr("app"), never)),
			observed(sb, exited("a", "sb0", "app", 1, 0, 1)), v1.PodFailed},
		{"own Never in an Always pod, exited 0", newPod(v1.RestartPolicyAlways, nil, withPolicy(ctr("app"), never)),
			observed(sb, exited("a", "sb0", "app", 0, 0, 1)), v1.PodSucceeded},
		{"own OnFailure in a Never pod, exited 1: restarting", newPod(v1.RestartPolicyNever, nil, withPolicy(ctr("app"), onFailure)),
			observed(sb, exited("a", "sb0", "app", 1, 0, 1)), v1.PodRunning},
		{"Restart rule on 42, exited 42: restarting", newPod(v1.RestartPolicyNever, nil, withRule(ctr("app"), restart, 42)),
			observed(sb, exited("a", "sb0", "app", 42, 0, 1)), v1.PodRunning},
		{"Restart rule on 42, exited 3", newPod(v1.RestartPolicyNever, nil, withRule(ctr("app"), restart, 42)),
			observed(sb, exited("a", "sb0", "app", 3, 0, 1)), v1.PodFailed},
		{"init own Never in an Always pod failed", newPod(v1.RestartPolicyAlways, inits(withPolicy(ctr("setup"), never)), ctr("app")),
			observed(sb, exited("i", "sb0", "setup", 1, 0, 1)), v1.PodFailed},
		{"init own OnFailure in a Never pod failed: restarting", newPod(v1.RestartPolicyNever, inits(withPolicy(ctr("setup"), onFailure)), ctr("app")),
			observed(sb, exited("i", "sb0", "setup", 1, 0, 1)), v1.PodPending},
	}
	for _, tc := range cases {
		if got := Compute(input(tc.pod, tc.obs)).Phase; got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}
