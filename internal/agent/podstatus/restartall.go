package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// ConditionAllContainersRestarting is the pod condition of RestartAllContainers
// (KEP-5532), as kubelet 1.36+ names it; the API types this agent builds against do not.
const ConditionAllContainersRestarting v1.PodConditionType = "AllContainersRestarting"

// The condition's reason and messages, as kubelet words them.
const (
	ReasonRestartAllContainersStarted = "RestartAllContainersStarted"
	restartAllMessage                 = "container exited with restart policy rule"
	removedByRestartAllMessage        = "The container is removed because RestartAllContainers in place"
)

// restartingAll is kubelet's ShouldAllContainersRestart: the previous status has
// AllContainersRestarting True, or the newest instance of an init or regular container
// exited with a code matching one of its RestartAllContainers rules (in the runtime, or
// as the previous status shows it).
func restartingAll(in Input, prev v1.PodStatus) bool {
	if c := findCondition(prev.Conditions, ConditionAllContainersRestarting); c != nil && c.Status == v1.ConditionTrue {
		return true
	}
	if plan.RestartAllTriggered(in.Pod, in.Observed) != "" {
		return true
	}
	old := append(append([]v1.ContainerStatus(nil), prev.InitContainerStatuses...), prev.ContainerStatuses...)
	for _, list := range [][]v1.Container{in.Pod.Spec.InitContainers, in.Pod.Spec.Containers} {
		for i := range list {
			st := findStatus(old, list[i].Name)
			if st == nil || st.State.Terminated == nil {
				continue
			}
			if rule, ok := plan.MatchRule(&list[i], st.State.Terminated.ExitCode); ok && rule.Action == plan.ActionRestartAllContainers {
				return true
			}
		}
	}
	return false
}

// allRestartingCondition is kubelet's GenerateAllContainersRestartingCondition, for a
// pod with a RestartAllContainers rule: True with reason RestartAllContainersStarted
// from the trigger until no init or regular container is left in the runtime; False
// otherwise (reason PodCompleted or PodFailed once the pod is done). kubelet sets no
// observedGeneration on it.
func allRestartingCondition(in Input, prev v1.PodStatus, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: ConditionAllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		c.Reason = ReasonPodCompleted
	case phase == v1.PodFailed:
		c.Reason = ReasonPodFailed
	case restartingAll(in, prev) && !plan.RestartAllCleanedUp(in.Pod, in.Observed):
		c.Status, c.Reason, c.Message = v1.ConditionTrue, ReasonRestartAllContainersStarted, restartAllMessage
	}
	return c
}

// removedByRestartAll is the status of a container RestartAllContainers removed, as
// kubelet shows it until the container starts again: waiting with reason
// RestartingAllContainers, its removal as the last termination (exit code 137), one more
// restart.
func removedByRestartAll(spec *v1.Container, old *v1.ContainerStatus) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name: spec.Name, Image: spec.Image, RestartCount: old.RestartCount + 1,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
			Reason: ReasonRestartingAllContainers, Message: removedByRestartAllMessage,
		}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ReasonRestartingAllContainers, Message: removedByRestartAllMessage, ExitCode: exitCodeUnknown,
		}},
	}
}
