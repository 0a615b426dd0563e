// Package podstatus builds a pod's v1.PodStatus from what the runtime reports (the
// planner's Observed), probe results and the executor's waiting reasons, with the
// kubelet's rules (generateAPIPodStatus, convertToAPIContainerStatuses, getPhase, the
// status manager's condition and start-time handling). It is pure: the time comes in as
// Input.Now and the previous status as Input.Previous.
//
// Container statuses are listed in spec order (init, regular, ephemeral). For each
// container the newest instance gives state, restartCount, imageID and containerID
// ("<runtime>://<id>"); the instance before it gives lastTerminationState. A created
// instance is waiting with no reason; an exited one terminated with the runtime's reason
// (Completed or Error from the exit code when the runtime gives none); an unknown one
// that was running before is terminated with ContainerStatusUnknown and exit code 137; a
// container without instance waits with ContainerCreating (PodInitializing when the pod
// has init containers). A container that must be (re)started (plan.ShouldRestart) and
// has an entry in Input.Waiting shows that reason instead, its terminated state moving
// to lastTerminationState. started is running plus a succeeded startup probe when there
// is one; ready is started plus a succeeded readiness probe when there is one (init
// containers: exited 0; ephemeral containers: neither is set, they have no probes).
//
// A container's own restartPolicy and restartPolicyRules (KEP-5307) decide, with the
// pod's restartPolicy, whether a stopped container counts as restarting for the phase.
// For RestartAllContainers (KEP-5532), a container the restart removed waits with reason
// RestartingAllContainers, its removal (exit code 137) as its last termination and one
// restart more; once running again it keeps that last termination, and a restart count
// never goes down.
//
// Phase, conditions (PodReadyToStartContainers, Initialized, Ready, ContainersReady,
// PodScheduled, and AllContainersRestarting for a pod with a RestartAllContainers rule)
// and their reasons follow the kubelet; see phase and the condition functions; a pod
// once Initialized stays so while its init containers run again. lastTransitionTime changes only when a condition's status changes; a
// terminal phase is never left; startTime is set once. podIP(s) come from the current
// sandbox while it is ready; while no sandbox of the pod is ready (a completed pod's is
// stopped) the previous status's stay, as the kubelet's PLEG keeps an exited pod's.
//
// UpdateProbes is the status manager's side: it brings a status Compute returned up to
// date with newer probe results (started, ready, ContainersReady, Ready) without a new
// observation, with the same rule for started and ready as Compute.
//
// Differences from the kubelet, on purpose: regular container statuses are in spec
// order (the kubelet sorts them by name); resources, volume mounts and user fields of
// container statuses are not filled; messages are worded by berth.
//
// status.observedGeneration is the pod's metadata.generation (never lower than the
// previous status's), and so is each generated condition's, AllContainersRestarting
// excepted (kubelet sets none on it), as kubelet 1.35+ does (KEP-5067).
package podstatus
