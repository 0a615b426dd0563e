package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
)

// retryAfterFailure is when a worker syncs again after a step failed for
// a reason no back-off covers (the runtime refused a sandbox, ...).
const retryAfterFailure = 2 * time.Second

// execute applies one sync's actions in kubelet's SyncPod order: kill the
// pod or the unwanted containers, create the sandbox, start the next init
// container or sidecars, then the regular containers. It returns when the
// worker should sync again at the latest (0: no need).
func (w *podWorker) execute(ctx context.Context, d desiredPod, obs observation, acts plan.Actions) time.Duration {
	if len(acts.ContainersToReset) > 0 {
		if !w.resetContainers(ctx, d.pod, acts) {
			return retryAfterFailure
		}
		// As kubelet, sync again at once to start the pod over.
		w.trigger()
		return 0
	}
	grace := podGrace(d.pod)
	if acts.KillPod {
		w.killPod(ctx, d.pod, obs, acts, grace)
	} else {
		w.killContainers(ctx, d.pod, obs, acts.ContainersToKill, grace)
	}
	next := w.noteWaits(d.pod, acts.Waits)
	if !acts.CreateSandbox && acts.SandboxID == "" {
		return next
	}
	sb, err := w.sandbox(ctx, d, obs, acts)
	if err != nil {
		return retryAfterFailure
	}
	for _, s := range acts.InitToStart {
		if err := w.startContainer(ctx, d, sb, obs, s); err != nil {
			return soonest(next, retryAfterFailure)
		}
	}
	var wg sync.WaitGroup
	var failed sync.Once
	retry := time.Duration(0)
	for _, s := range acts.ContainersToStart {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.startContainer(ctx, d, sb, obs, s); err != nil {
				failed.Do(func() { retry = retryAfterFailure })
			}
		}()
	}
	wg.Wait()
	return soonest(next, retry)
}

// soonest is the earlier of two delays, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// podGrace is the pod's terminationGracePeriodSeconds.
func podGrace(pod *v1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// noteWaits shows the containers held back by crash back-off as waiting
// in CrashLoopBackOff and returns when the first back-off ends.
func (w *podWorker) noteWaits(pod *v1.Pod, waits []plan.Wait) time.Duration {
	held := map[string]bool{}
	var next time.Duration
	for _, wait := range waits {
		held[wait.Name] = true
		w.setWaiting(wait.Name, podstatus.Waiting{Reason: wait.Reason, Message: wait.Message})
		w.record(agentapi.EventWarning, "BackOff", containerObject(pod, wait.Name),
			fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", wait.Name, pod.Name, pod.Namespace, pod.UID))
		next = soonest(next, max(wait.Until.Sub(w.deps.clock.Now()), 10*time.Millisecond))
	}
	w.mu.Lock()
	for name, reason := range w.waiting {
		if reason.Reason == plan.ReasonCrashLoopBackOff && !held[name] {
			delete(w.waiting, name)
		}
	}
	w.mu.Unlock()
	return next
}

// killPod stops every live container in plan.StopOrder (regular ones
// together, then sidecars one by one in reverse order), then the sandboxes
// the plan names that are still ready.
func (w *podWorker) killPod(ctx context.Context, pod *v1.Pod, obs observation, acts plan.Actions, grace time.Duration) {
	reasons := map[string]plan.Kill{}
	for _, k := range acts.ContainersToKill {
		reasons[k.ID] = k
	}
	if acts.KillPodReason == plan.PodSandboxNotReady || acts.KillPodReason == plan.PodSandboxNetworkChanged || acts.KillPodReason == plan.PodSandboxNoIP {
		w.record(agentapi.EventNormal, "SandboxChanged", "", "Pod sandbox changed, it will be killed and re-created.")
	}
	for _, group := range plan.StopOrder(pod, obs.plan) {
		var wg sync.WaitGroup
		for _, c := range group {
			k, ok := reasons[c.ID]
			if !ok {
				k = plan.Kill{ID: c.ID, Name: c.Name, Type: c.Type, Reason: plan.KillPodDone, Message: string(acts.KillPodReason)}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.killContainer(ctx, pod, obs, k, grace)
			}()
		}
		wg.Wait()
	}
	ready := map[string]bool{}
	for _, sb := range obs.plan.Sandboxes {
		ready[sb.ID] = sb.Ready
	}
	for _, id := range acts.StopSandboxes {
		if !ready[id] {
			continue
		}
		if err := w.deps.runtime.StopPodSandbox(ctx, id); err != nil && !criclient.IsNotFound(err) {
			w.record(agentapi.EventWarning, "FailedKillPod", "", fmt.Sprintf("error stopping sandbox %s: %v", id, err))
		}
	}
}

// killContainers stops the containers the plan no longer wants, in
// parallel.
func (w *podWorker) killContainers(ctx context.Context, pod *v1.Pod, obs observation, kills []plan.Kill, grace time.Duration) {
	var wg sync.WaitGroup
	for _, k := range kills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.killContainer(ctx, pod, obs, k, grace)
		}()
	}
	wg.Wait()
}

// killContainer runs the container's preStop hook (when it runs) and stops
// it with what is left of grace, at least 2 s, as the kubelet does.
func (w *podWorker) killContainer(ctx context.Context, pod *v1.Pod, obs observation, k plan.Kill, grace time.Duration) {
	spec, _, _ := podspec.FindContainer(pod, k.Name)
	object := containerObject(pod, k.Name)
	message := "Stopping container " + k.Name
	switch k.Reason {
	case plan.KillLivenessProbe:
		message = fmt.Sprintf("Container %s failed liveness probe, will be restarted", k.Name)
	case plan.KillStartupProbe:
		message = fmt.Sprintf("Container %s failed startup probe, will be restarted", k.Name)
	case plan.KillSpecChanged:
		message = fmt.Sprintf("Container %s definition changed, will be restarted", k.Name)
	}
	w.record(agentapi.EventNormal, "Killing", object, message)
	if spec != nil && probeGrace(spec, k.Reason) > 0 {
		grace = probeGrace(spec, k.Reason)
	}
	start := w.deps.clock.Now()
	if st := obs.containers[k.ID]; spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil &&
		st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
		w.runPreStop(ctx, pod, obs, k, spec, grace)
	}
	remaining := max(grace-w.deps.clock.Now().Sub(start), 2*time.Second)
	if grace == 0 {
		remaining = 0
	}
	if err := w.deps.runtime.StopContainer(ctx, k.ID, remaining); err != nil && !criclient.IsNotFound(err) {
		w.record(agentapi.EventWarning, "FailedKillPod", object, fmt.Sprintf("error killing container %s: %v", k.Name, err))
	}
	w.deps.probes.Remove(k.ID)
}

// probeGrace is a failed probe's own terminationGracePeriodSeconds, if set.
func probeGrace(c *v1.Container, reason plan.KillReason) time.Duration {
	var p *v1.Probe
	switch reason {
	case plan.KillLivenessProbe:
		p = c.LivenessProbe
	case plan.KillStartupProbe:
		p = c.StartupProbe
	}
	if p == nil || p.TerminationGracePeriodSeconds == nil {
		return 0
	}
	return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
}

// runPreStop runs the preStop hook bounded by grace; a failure is an event
// and the container is stopped anyway.
func (w *podWorker) runPreStop(ctx context.Context, pod *v1.Pod, obs observation, k plan.Kill, spec *v1.Container, grace time.Duration) {
	hookCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := w.runHook(hookCtx, spec.Lifecycle.PreStop, pod, obs, k.ID, spec); err != nil {
		w.record(agentapi.EventWarning, "FailedPreStopHook", containerObject(pod, k.Name),
			fmt.Sprintf("PreStopHook failed: %v", err))
	}
}

// containerObject is kubelet's event field path of a container.
func containerObject(pod *v1.Pod, name string) string {
	_, typ, found := podspec.FindContainer(pod, name)
	switch {
	case !found:
		return ""
	case typ == podspec.ContainerTypeInit || typ == podspec.ContainerTypeSidecar:
		return "spec.initContainers{" + name + "}"
	case typ == podspec.ContainerTypeEphemeral:
		return "spec.ephemeralContainers{" + name + "}"
	}
	return "spec.containers{" + name + "}"
}

// ensureLogDirectory creates the pod's log directory, as the kubelet does
// before it asks for a sandbox; root-only, unlike the kubelet's 0755: logs
// may hold what a container prints of its secrets.
func ensureLogDirectory(cfg *runtimeapi.PodSandboxConfig) error {
	if dir := cfg.GetLogDirectory(); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("pod log directory %s: %w", dir, err)
		}
	}
	return nil
}
