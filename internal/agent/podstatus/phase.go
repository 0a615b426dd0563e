package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
)

// phaseCounts tallies container statuses the way the kubelet's getPhase does.
type phaseCounts struct {
	pendingInit        int // non-restartable init containers not yet done
	pendingSidecars    int // sidecars not yet started
	failedInit         int // non-restartable init containers that exited non-zero
	unknown            int
	running            int
	waiting            int
	stopped, succeeded int // regular containers terminated (or waiting after termination)
}

// phase is the kubelet's getPhase (without container-level restart rules):
//
//   - Failed when an init container failed and restartPolicy is Never;
//   - Pending while an init container is not done, a sidecar is not started (unless the
//     pod was initialized in its current sandbox), or a container waits to be created;
//   - Running when a container (sidecars count) runs and every container is known;
//   - when nothing runs and every regular container stopped: Succeeded or Failed if the
//     pod is terminal; else Running under Always (restarting), Succeeded if all exited 0,
//     Failed under Never, Running under OnFailure (restarting);
//   - Pending otherwise.
func phase(pod *v1.Pod, inits, regulars []v1.ContainerStatus, terminal, initialized bool) v1.PodPhase {
	var n phaseCounts
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		st := findStatus(inits, spec.Name)
		if plan.IsSidecar(spec) {
			n.addSidecar(st)
		} else {
			n.addInit(st)
		}
	}
	for i := range pod.Spec.Containers {
		n.addRegular(findStatus(regulars, pod.Spec.Containers[i].Name))
	}
	if n.failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case n.pendingInit > 0 || (n.pendingSidecars > 0 && !initialized) || n.waiting > 0:
		return v1.PodPending
	case n.running > 0 && n.unknown == 0:
		return v1.PodRunning
	case n.running == 0 && n.stopped > 0 && n.unknown == 0:
		return stoppedPhase(pod.Spec.RestartPolicy, n, terminal)
	}
	return v1.PodPending
}

// stoppedPhase is the phase of a pod whose regular containers all stopped.
func stoppedPhase(policy v1.RestartPolicy, n phaseCounts, terminal bool) v1.PodPhase {
	switch {
	case terminal && n.stopped == n.succeeded:
		return v1.PodSucceeded
	case terminal:
		return v1.PodFailed
	case policy == v1.RestartPolicyAlways || policy == "":
		return v1.PodRunning
	case n.stopped == n.succeeded:
		return v1.PodSucceeded
	case policy == v1.RestartPolicyNever:
		return v1.PodFailed
	}
	return v1.PodRunning // OnFailure, restarting the failed ones
}

func (n *phaseCounts) addInit(st *v1.ContainerStatus) {
	switch {
	case st == nil, st.State.Running != nil:
		n.pendingInit++
	case st.State.Terminated != nil:
		if st.State.Terminated.ExitCode != 0 {
			n.failedInit++
		}
	case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
		if st.LastTerminationState.Terminated.ExitCode != 0 {
			n.failedInit++
		}
	default:
		n.pendingInit++
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

func (n *phaseCounts) addRegular(st *v1.ContainerStatus) {
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
	case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
		n.stopped++
	case st.State.Waiting != nil:
		n.waiting++
	default:
		n.unknown++
	}
}
