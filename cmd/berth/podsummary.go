package main

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// podSummary is one row of `berth get pods`: the columns kubectl derives
// from a pod's status.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time // zero when no container restarted
}

// summarizePod follows kubectl's rules for the READY, STATUS and RESTARTS
// columns: the first init container that has not completed names the
// status (Init:N/M, Init:<reason>), then the last regular container with a
// waiting or terminated reason; Terminating wins while a pod is deleted.
func summarizePod(pod *v1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if isSidecar(c) {
			sidecars[c.Name] = true
			s.total++
		}
	}
	initializing, sidecarRestarts, sidecarLast := s.summarizeInit(pod, sidecars)
	if !initializing || conditionTrue(pod, v1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, sidecarLast
		s.summarizeRegular(pod)
	}
	if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		s.status = "Terminating"
	}
	return s
}

func isSidecar(c v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// summarizeInit walks the init containers up to the first one that has not
// completed; it returns whether the pod is still initializing and the
// restarts of sidecars (which count even once the pod is initialized).
func (s *podSummary) summarizeInit(pod *v1.Pod, sidecars map[string]bool) (bool, int, time.Time) {
	sidecarRestarts, sidecarLast := 0, time.Time{}
	for i, st := range pod.Status.InitContainerStatuses {
		s.restarts += int(st.RestartCount)
		s.noteRestart(st, &s.lastRestart)
		if sidecars[st.Name] {
			sidecarRestarts += int(st.RestartCount)
			s.noteRestart(st, &sidecarLast)
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue
		case sidecars[st.Name] && st.Started != nil && *st.Started:
			if st.Ready {
				s.ready++
			}
			continue
		case st.State.Terminated != nil:
			s.status = "Init:" + terminatedReason(st.State.Terminated)
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + st.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return true, sidecarRestarts, sidecarLast
	}
	return false, sidecarRestarts, sidecarLast
}

// summarizeRegular takes the status from the last regular container that
// waits or terminated, and counts the ready ones.
func (s *podSummary) summarizeRegular(pod *v1.Pod) {
	running := false
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		st := pod.Status.ContainerStatuses[i]
		s.restarts += int(st.RestartCount)
		s.noteRestart(st, &s.lastRestart)
		switch {
		case st.State.Waiting != nil && st.State.Waiting.Reason != "":
			s.status = st.State.Waiting.Reason
		case st.State.Terminated != nil:
			s.status = terminatedReason(st.State.Terminated)
		case st.Ready && st.State.Running != nil:
			running = true
			s.ready++
		}
	}
	if s.status == "Completed" && running {
		s.status = "NotReady"
		if conditionTrue(pod, v1.PodReady) {
			s.status = "Running"
		}
	}
}

func (s *podSummary) noteRestart(st v1.ContainerStatus, last *time.Time) {
	if t := st.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(*last) {
		*last = t.FinishedAt.Time
	}
}

// terminatedReason is the reason, else Signal:N or ExitCode:N.
func terminatedReason(t *v1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	}
	return fmt.Sprintf("ExitCode:%d", t.ExitCode)
}

func conditionTrue(pod *v1.Pod, typ v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// restartsColumn is "N" or "N (5m ago)".
func (s podSummary) restartsColumn(now time.Time) string {
	if s.restarts == 0 || s.lastRestart.IsZero() {
		return fmt.Sprint(s.restarts)
	}
	return fmt.Sprintf("%d (%s ago)", s.restarts, duration.HumanDuration(now.Sub(s.lastRestart)))
}

// age is kubectl's AGE column of an object created at t.
func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// podSettled reports whether a pod reached a state `berth run` stops
// waiting for: running with every container ready, or finished.
func podSettled(pod *v1.Pod) (settled, failed bool) {
	switch pod.Status.Phase {
	case v1.PodSucceeded:
		return true, false
	case v1.PodFailed:
		return true, true
	case v1.PodRunning:
		return conditionTrue(pod, v1.PodReady), false
	}
	return false, false
}
