// Package plan is the agent's pure planner: from the desired Pod, the state the runtime
// reports for it (Observed), probe results and crash back-off it computes the Actions
// of one sync, as the kubelet's computePodActions does. Compute reads nothing but its
// Input (the time is Input.Now) and always returns the same Actions for the same Input.
//
// # Sandbox
//
// The newest sandbox (highest attempt) is the current one. The pod gets a new sandbox,
// with attempt = highest attempt + 1 (0 for the first), after everything of the pod is
// killed, when it has no sandbox, more than one sandbox is ready, the newest is not
// ready, its network namespace mode differs from spec.hostNetwork, or a pod-network
// sandbox has no IP. No new sandbox is created, and the pod is Done, when
// restartPolicy is Never and any container of the pod was ever created, or when no
// regular container is left to run (OnFailure: all succeeded) and one was created
// already. In a new sandbox initialization starts over from the first init container
// (old init instances count for nothing); without init containers every regular
// container that may still run is started, subject to back-off.
//
// Containers still alive in a sandbox other than the current one are killed
// (OldSandbox).
//
// # Init containers and sidecars
//
// Only instances in the current sandbox count. Init containers run one at a time in spec
// order; each must exit 0 (an OOMKilled one has failed) before the next starts. A failed
// or unknown-state init container is restarted, except under restartPolicy Never: then
// the pod is Done (it will be Failed) and everything is killed. A sidecar (init
// container with restartPolicy Always) counts as done once running and, if it has a
// startup probe, once that succeeded; it is restarted whenever it exits, whatever the
// pod's policy, and killed and restarted when its startup or liveness probe failed or
// its spec hash changed. Once a regular container has a created or running instance in
// the current sandbox the pod counts as initialized and only sidecars are looked after.
// Regular containers are looked at only once the pod is initialized.
//
// # Regular containers
//
// A container that never ran is started. An exited one is restarted per ShouldRestart
// (Always: always; OnFailure: exit code != 0; Never: no). A created-but-never-started
// (agent restarted mid-start) or unknown-state instance is killed and replaced, under any
// policy. A running one is killed when its spec hash differs from Input.Hash (then
// restarted whatever the policy) or when its liveness or startup probe failed (then
// restarted unless the policy is Never). When no regular container is kept running and
// none is to be started or waits, the whole pod is killed (sidecars too) and Done.
// Ephemeral containers are started once and never restarted.
//
// # Container restart rules
//
// As kubelet 1.35+ does (KEP-5307), an init or regular container's own restartPolicy
// (Always, OnFailure, Never) and restartPolicyRules override the pod's restartPolicy for
// it: an exited instance is restarted when a rule with action Restart (or
// RestartAllContainers) matches its exit code (In: listed, NotIn: not listed; the first
// matching rule wins), else as its own policy says (ContainerShouldRestart). A running
// container killed for a failed probe, and an init container in unknown state, have no
// exit code: their own policy decides (anything but Never restarts). A failed init
// container that is not restarted ends the pod. When the pod gets a new sandbox, a
// container whose own policy is OnFailure and that succeeded is not started again;
// kubelet looks at nothing else there (the pod's Never still means no new sandbox once a
// container ran).
//
// # RestartAllContainers
//
// Before anything else, as kubelet 1.36+ does (KEP-5532): when the newest instance of an
// init or regular container exited with a code matching one of its rules with action
// RestartAllContainers, the plan is only that restart (Actions.RestartAll): every
// instance of every init and regular container, in any sandbox, is killed if it may
// still run and removed (ContainersToReset), the triggering instances last; the sandbox
// and the ephemeral containers are left alone. With nothing left, the next sync starts
// the pod over in its sandbox from the first init container. A pod being deleted is not
// restarted. The runtime alone says whether the restart is still to do (kubelet also
// keeps it going through the AllContainersRestarting condition): the triggering
// instances are removed last, so an agent stopped midway finds them again.
//
// # Back-off
//
// A (re)start of a container that has an exited instance (for init containers and
// sidecars: in the current sandbox) becomes a Wait with reason CrashLoopBackOff while
// Input.Backoff[name] is after Input.Now; the message gives the delay as
// Backoff[name] - FinishedAt of the newest exited instance, as the kubelet words it.
// Containers never started are not held back.
//
// # Restart counts
//
// Start.RestartCount is 0 for a container never seen, else the highest restart count
// of any of its instances plus one (the kubelet takes the newest instance's; the highest
// is the same in practice and keeps CRI names unique when old instances remain).
//
// # Not the planner's job
//
// Deleting a pod, preStop hooks and grace periods belong to the executor; StopOrder
// gives it the kubelet's order: regular containers together, then sidecars in reverse.
// In-place resize is not planned.
package plan
