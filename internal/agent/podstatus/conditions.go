package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// Condition reasons, as the kubelet words them.
const (
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// generated are the condition types Compute owns; others in pod.status are kept.
var generated = map[v1.PodConditionType]bool{
	v1.PodReadyToStartContainers: true,
	v1.PodInitialized:            true,
	v1.PodReady:                  true,
	v1.ContainersReady:           true,
	v1.PodScheduled:              true,
	// AllContainersRestarting is kubelet's only for pods with a RestartAllContainers rule
	ConditionAllContainersRestarting: true,
}

// conditions returns the pod's conditions in the kubelet's order: the applied pod's own
// conditions Compute does not own, then PodReadyToStartContainers, Initialized, Ready,
// ContainersReady and PodScheduled (then AllContainersRestarting). A generated condition
// keeps its previous lastTransitionTime while its status stays the same, and has the
// pod's generation as its observedGeneration.
func conditions(in Input, prev v1.PodStatus, s *v1.PodStatus) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range in.Pod.Status.Conditions {
		if !generated[c.Type] {
			out = append(out, c)
		}
	}
	all := append(append([]v1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...)
	sandboxOK := !plan.SandboxChanged(in.Pod, in.Observed).Recreate
	own := []v1.PodCondition{
		{Type: v1.PodReadyToStartContainers, Status: boolStatus(sandboxOK)},
		initializedCondition(in.Pod, prev, all, s.Phase),
		readyCondition(in.Pod, out, all, s.Phase),
		containersReadyCondition(in.Pod, all, s.Phase),
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	if plan.AllContainersCouldRestart(&in.Pod.Spec) {
		own = append(own, allRestartingCondition(in, prev, s.Phase))
	}
	for _, c := range own {
		if c.Type != ConditionAllContainersRestarting { // kubelet leaves it without one
			c.ObservedGeneration = in.Pod.Generation
		}
		c.LastTransitionTime = metav1.NewTime(in.Now)
		if old := findCondition(prev.Conditions, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

// containersReadyCondition is True when every regular container and every sidecar is
// ready; a Succeeded pod reports PodCompleted and a Failed one PodFailed (both False).
func containersReadyCondition(pod *v1.Pod, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse}
	switch phase {
	case v1.PodSucceeded:
		c.Reason = ReasonPodCompleted
		return c
	case v1.PodFailed:
		c.Reason = ReasonPodFailed
		return c
	}
	var names []string
	for i := range pod.Spec.InitContainers {
		if plan.IsSidecar(&pod.Spec.InitContainers[i]) {
			names = append(names, pod.Spec.InitContainers[i].Name)
		}
	}
	for _, spec := range pod.Spec.Containers {
		names = append(names, spec.Name)
	}
	var unknown, unready []string
	for _, name := range names {
		switch st := findStatus(all, name); {
		case st == nil:
			unknown = append(unknown, name)
		case !st.Ready:
			unready = append(unready, name)
		}
	}
	c.Message = listMessage("containers with unknown status", unknown, "containers with unready status", unready)
	if c.Message == "" {
		c.Status = v1.ConditionTrue
		return c
	}
	c.Reason = ReasonContainersNotReady
	return c
}

// readyCondition follows ContainersReady, then requires every readiness gate's condition
// to be True.
func readyCondition(pod *v1.Pod, conds []v1.PodCondition, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cr := containersReadyCondition(pod, all, phase)
	if cr.Status != v1.ConditionTrue {
		return v1.PodCondition{Type: v1.PodReady, Status: cr.Status, Reason: cr.Reason, Message: cr.Message}
	}
	var msgs []string
	for _, gate := range pod.Spec.ReadinessGates {
		switch c := findCondition(conds, gate.ConditionType); {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("readiness gate %q has no condition", gate.ConditionType))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("readiness gate %q is %v", gate.ConditionType, c.Status))
		}
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse,
			Reason: ReasonReadinessGatesNotReady, Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
}

// initializedCondition is True when every init container completed (exited 0) and every
// sidecar started, when the pod Succeeded (reason PodCompleted), once a regular
// container has run, or when it was True before: as kubelet 1.36+ does, a pod once
// initialized stays so while its init containers run again (RestartAllContainers).
func initializedCondition(pod *v1.Pod, prev v1.PodStatus, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		st := findStatus(all, spec.Name)
		switch {
		case st == nil:
			unknown = append(unknown, spec.Name)
		case plan.IsSidecar(spec) && (st.Started == nil || !*st.Started):
			incomplete = append(incomplete, spec.Name)
		case !plan.IsSidecar(spec) && !st.Ready:
			incomplete = append(incomplete, spec.Name)
		}
	}
	c := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		c.Reason = ReasonPodCompleted
		return c
	}
	if regularStarted(pod, all) {
		return c
	}
	c.Message = listMessage("containers with unknown status", unknown, "containers with incomplete status", incomplete)
	if old := findCondition(prev.Conditions, v1.PodInitialized); c.Message != "" && old != nil && old.Status == v1.ConditionTrue {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	if c.Message != "" {
		c.Status, c.Reason = v1.ConditionFalse, ReasonContainersNotInitialized
	}
	return c
}

// regularStarted reports whether a regular container is running or terminated.
func regularStarted(pod *v1.Pod, all []v1.ContainerStatus) bool {
	for _, spec := range pod.Spec.Containers {
		if st := findStatus(all, spec.Name); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// listMessage renders "<label>: [a b]" for each non-empty list, joined by ", ".
func listMessage(label1 string, list1 []string, label2 string, list2 []string) string {
	var parts []string
	if len(list1) > 0 {
		parts = append(parts, fmt.Sprintf("%s: %v", label1, list1))
	}
	if len(list2) > 0 {
		parts = append(parts, fmt.Sprintf("%s: %v", label2, list2))
	}
	return strings.Join(parts, ", ")
}

func findCondition(list []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

func boolStatus(b bool) v1.ConditionStatus {
	if b {
		return v1.ConditionTrue
	}
	return v1.ConditionFalse
}
