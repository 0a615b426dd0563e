package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// phaseCounts tallies container statuses the way the kubelet's getPhase does.
type phaseCounts struct {
	spec            *v1.PodSpec
	pendingInit     int // non-restartable init containers not yet done
	pendingSidecars int // sidecars not yet started
	// failedInitFinal counts non-restartable init containers that failed and that
	// their restart policy and rules do not restart.
	failedInitFinal    int
	unknown            int
	running            int
	waiting            int
	stopped, succeeded int // regular containers terminated (or waiting after termination)
	stoppedFinal       int // of the stopped, those their restart policy does not restart
}

// phase is the kubelet's getPhase, with container restart rules (KEP-5307):
//
//   - Failed when an init container failed and neither its own restart policy and rules
//     nor the pod's restartPolicy restart it;
//   - Pending while an init container is not done, a sidecar is not started (unless the
//     pod was initialized in its current sandbox), or a container waits to be created;
//   - Running when a container (sidecars count) runs and every container is known;
//   - when nothing runs and every regular container stopped: Succeeded or Failed if the
//     pod is terminal; else Running when one of them is restarted (its own policy and
//     rules, else the pod's; a container removed by RestartAllContainers always is),
//     Succeeded if all exited 0, Failed otherwise;
//   - Pending otherwise.
func phase(pod *v1.Pod, inits, regulars []v1.ContainerStatus, terminal, initialized bool) v1.PodPhase {
	n := phaseCounts{spec: &pod.Spec}
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		st := findStatus(inits, spec.Name)
		if plan.IsSidecar(spec) {
			n.addSidecar(st)
		} else {
			n.addInit(spec, st)
		}
	}
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		n.addRegular(spec, findStatus(regulars, spec.Name))
	}
	if n.failedInitFinal > 0 {
		return v1.PodFailed
	}
	switch {
	case n.pendingInit > 0 || (n.pendingSidecars > 0 && !initialized) || n.waiting > 0:
		return v1.PodPending
	case n.running > 0 && n.unknown == 0:
		return v1.PodRunning
	case n.running == 0 && n.stopped > 0 && n.unknown == 0:
		return stoppedPhase(n, terminal)
	}
	return v1.PodPending
}

// stoppedPhase is the phase of a pod whose regular containers all stopped.
func stoppedPhase(n phaseCounts, terminal bool) v1.PodPhase {
	switch {
	case terminal && n.stopped == n.succeeded:
		return v1.PodSucceeded
	case terminal:
		return v1.PodFailed
	case n.stopped != n.stoppedFinal:
		return v1.PodRunning // some are restarted
	case n.stopped == n.succeeded:
		return v1.PodSucceeded
	}
	return v1.PodFailed
}

// restarted reports whether container c, terminated as t, is restarted: its restart
// policy and rules say so, or RestartAllContainers removed it.
func (n *phaseCounts) restarted(c *v1.Container, t *v1.ContainerStateTerminated) bool {
	return t.Reason == ReasonRestartingAllContainers || plan.ContainerShouldRestart(c, n.spec, t.ExitCode)
}

func (n *phaseCounts) addInit(c *v1.Container, st *v1.ContainerStatus) {
	var t *v1.ContainerStateTerminated
	switch {
	case st == nil, st.State.Running != nil:
		n.pendingInit++
		return
	case st.State.Terminated != nil:
		t = st.State.Terminated
	case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
		t = st.LastTerminationState.Terminated
	default:
		n.pendingInit++
		return
	}
	if t.ExitCode != 0 && !n.restarted(c, t) {
		n.failedInitFinal++
	}
}

func (n *phaseCounts) addSidecar(st *v1.ContainerStatus) {
	switch {
	case st == nil:
		n.unknown++
	case st.State.Running != nil:
		if st.Started == nil || !*st.Started {
			n.pendingSidecars++
		}
		n.running++
	case st.State.Terminated != nil:
		// a stopped sidecar does not count
	case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
		// nor one waiting to restart
	case st.State.Waiting != nil:
		n.pendingSidecars++
		n.waiting++
	default:
		n.pendingSidecars++
		n.unknown++
	}
}

func (n *phaseCounts) addRegular(c *v1.Container, st *v1.ContainerStatus) {
	switch {
	case st == nil:
		n.unknown++
	case st.State.Running != nil:
		n.running++
	case st.State.Terminated != nil:
		n.stopped++
		if st.State.Terminated.ExitCode == 0 {
			n.succeeded++
		}
		if !n.restarted(c, st.State.Terminated) {
			n.stoppedFinal++
		}
	case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
		n.stopped++
		if !n.restarted(c, st.LastTerminationState.Terminated) {
			n.stoppedFinal++
		}
	case st.State.Waiting != nil:
		n.waiting++
	default:
		n.unknown++
	}
}
