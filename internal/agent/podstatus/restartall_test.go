package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// A pod restarting all its containers in place, status by status as kubelet shows it:
// the trigger, the reset, the init container running again, everything running again.
func TestRestartAllContainersStatuses(t *testing.T) {
	sb := sandboxes(ready("sb0"))
	pod := newPod(v1.RestartPolicyAlways, inits(ctr("setup")),
		withRule(ctr("app"), plan.ActionRestartAllContainers, 42), ctr("log"))
	in := input(pod, observed(sb, exited("s", "sb0", "setup", 0, 0, 1),
		running("a", "sb0", "app", 0, 2), running("l", "sb0", "log", 0, 2)))
	before := Compute(in)
	if c := condition(before, ConditionAllContainersRestarting); c.Status != v1.ConditionFalse || c.Reason != "" {
		t.Fatalf("before the trigger: %+v; want False without reason", c)
	}

	in.Previous, in.Observed = &before, observed(sb, exited("s", "sb0", "setup", 0, 0, 1),
		exited("a", "sb0", "app", 42, 0, 2), running("l", "sb0", "log", 0, 2))
	triggered := Compute(in)
	if c := condition(triggered, ConditionAllContainersRestarting); c.Status != v1.ConditionTrue || c.Reason != ReasonRestartAllContainersStarted ||
		c.LastTransitionTime.IsZero() {
		t.Errorf("app exited 42: %+v; want True, %s, with a transition time", c, ReasonRestartAllContainersStarted)
	}
	if triggered.Phase != v1.PodRunning {
		t.Errorf("phase %s after the trigger; want Running", triggered.Phase)
	}

	in.Previous, in.Observed = &triggered, observed(sb) // every container removed
	reset := Compute(in)
	if c := condition(reset, ConditionAllContainersRestarting); c.Status != v1.ConditionFalse {
		t.Errorf("everything removed: %+v; want False", c)
	}
	for _, list := range [][]v1.ContainerStatus{reset.InitContainerStatuses, reset.ContainerStatuses} {
		for _, st := range list {
			last := st.LastTerminationState.Terminated
			if w := st.State.Waiting; w == nil || w.Reason != ReasonRestartingAllContainers || st.RestartCount != 1 ||
				last == nil || last.Reason != ReasonRestartingAllContainers || last.ExitCode != 137 {
				t.Errorf("%s after the reset: %+v; want waiting RestartingAllContainers, one restart, last exit 137", st.Name, st)
			}
		}
	}
	if reset.Phase != v1.PodRunning || condition(reset, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Errorf("after the reset: phase %s, Initialized %v; want Running, still True", reset.Phase, condition(reset, v1.PodInitialized))
	}

	in.Previous, in.Observed = &reset, observed(sb, running("s1", "sb0", "setup", 1, 5))
	initAgain := Compute(in)
	if st := containerStatus(initAgain.ContainerStatuses, "app"); st.RestartCount != 1 || st.State.Waiting == nil {
		t.Errorf("app while setup runs again: %+v; want waiting, restart count 1", st)
	}
	if initAgain.Phase != v1.PodPending || condition(initAgain, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Errorf("setup running again: phase %s, Initialized %v; want Pending (kubelet's), still True",
			initAgain.Phase, condition(initAgain, v1.PodInitialized))
	}

	in.Previous, in.Observed = &initAgain, observed(sb, exited("s1", "sb0", "setup", 0, 1, 5),
		running("a1", "sb0", "app", 1, 6), running("l1", "sb0", "log", 1, 6))
	again := Compute(in)
	for _, name := range []string{"app", "log"} {
		st := containerStatus(again.ContainerStatuses, name)
		if last := st.LastTerminationState.Terminated; st.State.Running == nil || st.RestartCount != 1 ||
			last == nil || last.Reason != ReasonRestartingAllContainers {
			t.Errorf("%s running again: %+v; want running, restart count 1, last termination RestartingAllContainers", name, st)
		}
	}
	if again.Phase != v1.PodRunning || condition(again, ConditionAllContainersRestarting).Status != v1.ConditionFalse {
		t.Errorf("running again: phase %s, %+v", again.Phase, condition(again, ConditionAllContainersRestarting))
	}
}

func TestAllContainersRestartingOnlyWithTheRule(t *testing.T) {
	sb := sandboxes(ready("sb0"))
	plain := Compute(input(newPod(v1.RestartPolicyAlways, nil, withRule(ctr("app"), v1.ContainerRestartRuleActionRestart, 1)),
		observed(sb, running("a", "sb0", "app", 0, 1))))
	for _, c := range plain.Conditions {
		if c.Type == ConditionAllContainersRestarting {
			t.Errorf("a pod without a RestartAllContainers rule got %+v", c)
		}
	}
	done := Compute(input(newPod(v1.RestartPolicyNever, nil, withRule(ctr("app"), plan.ActionRestartAllContainers, 42)),
		observed(sb, exited("a", "sb0", "app", 0, 0, 1))))
	if c := condition(done, ConditionAllContainersRestarting); done.Phase != v1.PodSucceeded || c.Status != v1.ConditionFalse || c.Reason != ReasonPodCompleted {
		t.Errorf("succeeded pod: phase %s, %+v; want Succeeded, False PodCompleted", done.Phase, c)
	}
}
