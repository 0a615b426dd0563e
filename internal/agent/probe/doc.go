// Package probe runs a pod's liveness, readiness and startup probes and its
// lifecycle hooks from the agent's side, with the kubelet's semantics.
//
// # One-shot probes
//
// [Run] performs one probe: httpGet, tcpSocket and grpc connect to the pod IP
// (or the handler's host); exec runs the command in the container through CRI
// ExecSync ([Execer]). Its [Result] is Success, Failure, or Unknown when the
// probe could not be performed at all (an unresolvable named port, an ExecSync
// that failed for a reason other than a timeout); the kubelet discards such
// results, and so does the [Manager]. Exec probe commands have their $(VAR)
// references expanded from the container's env; hook commands do not, as in
// the kubelet.
//
// # Workers
//
// The agent calls [Manager.Add] for every container it sees running (with or
// without probes: Add is idempotent per container ID), [Manager.Remove] once
// the container has exited or been removed, [Manager.SetTerminating] when the
// pod's deletion begins, and [Manager.RemovePod] when it is gone. The Target
// given to Add, and the container spec it points to, must not change
// afterwards. Add starts one goroutine per
// probe of the container. Each honours initialDelaySeconds (measured from the
// container's start time), periodSeconds, timeoutSeconds, successThreshold and
// failureThreshold; liveness and readiness do not run until the startup probe
// has succeeded. A liveness failure or a startup probe reaching its threshold
// puts the worker on hold until the container is replaced (a new ID), as in the
// kubelet.
//
// Initial results follow the kubelet: readiness starts as Failure (not ready),
// liveness as Success, startup as Unknown (not started). [Manager.Status] is
// the authoritative view the planner and podstatus read; [Manager.Updates]
// carries one [Update] each time a thresholded result changes, as a prompt to
// resync. The consumer must keep draining Updates: a worker blocks until its
// update is taken (or the container is removed). When a liveness or startup
// failure makes the agent kill a container, the probe's
// terminationGracePeriodSeconds, if set, overrides the pod's: that is the
// caller's to apply.
//
// [Options.SecondsUnit] sets what one "second" of a probe field means; it is
// time.Second in the agent and a few milliseconds in tests.
//
// # Differences from the kubelet, on purpose
//
//   - The first probe runs as soon as initialDelaySeconds has elapsed rather
//     than on the first period tick after it.
//   - Random start-up jitter (up to one period) is applied only to containers
//     that were already past their initial delay when added to a manager
//     younger than one period, i.e. containers recovered after an agent
//     restart.
//   - A pod with hostNetwork and no pod IP is probed on 127.0.0.1; the kubelet
//     would use the node's IP. Callers that know the node IP pass it as PodIP.
//
// # Lifecycle hooks
//
// [RunHook] runs a postStart or preStop handler: exec (non-zero exit is an
// error carrying the output), httpGet and sleep. The caller bounds the hook:
// preStop by the remaining termination grace period (the ctx), postStart by
// nothing but the container's own life. When postStart fails, the caller kills
// the container with reason FailedPostStartHook and lets the restart policy
// decide, as the kubelet does. httpGet hooks fail only when no HTTP response
// arrives: like the kubelet, the status code is not checked. tcpSocket is
// deprecated and unsupported as a lifecycle handler; like the kubelet, RunHook
// returns an error for it.
package probe
