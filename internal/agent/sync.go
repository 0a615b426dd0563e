package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/probe"
)

// sync is one pass of the worker: observe the pod in the runtime, plan,
// act, and compute the status. It returns when to sync again at the
// latest and whether the pod is gone for good.
func (w *podWorker) sync(ctx context.Context) (time.Duration, bool) {
	d := w.snapshot()
	if d.unscheduled != nil && !d.terminating() {
		// Waits for the scheduler (schedule.go): nothing of it was ever
		// made, nothing to look at in the runtime.
		return idleResync, false
	}
	obs, err := w.deps.observe(ctx, w.uid)
	if err != nil {
		if ctx.Err() == nil {
			w.deps.log.Warn("sync: observe", "pod", d.key(), "error", err)
		}
		return retryAfterFailure, false
	}
	if d.terminating() {
		return w.terminate(ctx, d, obs)
	}
	if d.failure != nil {
		return w.syncFailed(ctx, d, obs), false
	}
	if err := w.ensureVolumes(ctx, d); err != nil {
		w.record(agentapi.EventWarning, "FailedMount", "", err.Error())
		w.updateStatus(d, obs, plan.Actions{})
		return retryAfterFailure, false
	}
	acts := plan.Compute(plan.Input{
		Pod: d.pod, Observed: obs.plan, Probes: w.probeStatuses(obs.plan),
		Backoff: w.backoffs(d.pod, obs.plan), Hash: podspec.ContainerHash, Now: w.deps.clock.Now(),
	})
	if len(acts.ContainersToReset) > 0 {
		// AllContainersRestarting shows while the containers go.
		w.updateStatus(d, obs, acts)
	}
	next := w.execute(ctx, d, obs, acts)
	if acted(acts) {
		if fresh, err := w.deps.observe(ctx, w.uid); err == nil {
			obs = fresh
		}
	}
	w.trackProbes(d.pod, obs)
	w.removeOldContainers(ctx, obs)
	w.updateStatus(d, obs, acts)
	return next, false
}

// acted reports whether the actions changed anything in the runtime.
func acted(acts plan.Actions) bool {
	return acts.KillPod || acts.CreateSandbox ||
		len(acts.ContainersToKill)+len(acts.InitToStart)+len(acts.ContainersToStart)+len(acts.ContainersToReset) > 0
}

// ensureVolumes sets the pod's volumes up before its first sandbox, and
// again when its ConfigMaps or Secrets changed (their files are updated
// atomically in place); the sources go into the agent's store first, so a
// sandbox never refers to sources the store lacks. A change that arrives
// during the setup moves the version again, so the next sync sets up once
// more. A pod whose sources recovery could not find is left as it is.
func (w *podWorker) ensureVolumes(ctx context.Context, d desiredPod) error {
	w.mu.Lock()
	done := w.volumesVersion == d.sourcesVersion
	w.mu.Unlock()
	if done {
		return nil
	}
	if len(d.sourcesMissing) > 0 {
		return fmt.Errorf("the agent's store lacks %s of this pod (found at recovery): its volumes and containers are left as they are until its manifests are applied again",
			strings.Join(d.sourcesMissing, ", "))
	}
	if err := w.deps.sources.Save(w.uid, d.sources); err != nil {
		return fmt.Errorf("keep the pod's ConfigMaps and Secrets: %w", err)
	}
	paths, err := w.deps.volumes.Setup(ctx, d.pod, d.sources, w.deps.downward(nil))
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.volumePaths, w.volumesVersion = paths, d.sourcesVersion
	w.mu.Unlock()
	return nil
}

// downward is what the downward API takes from outside the pod.
func (deps *syncDeps) downward(podIPs []string) podspec.Downward {
	return podspec.Downward{PodIPs: podIPs, HostIPs: deps.node.hostIPs, Allocatable: deps.node.allocatable}
}

// probeStatuses reads the probe manager's results for the newest instance
// of each container.
func (w *podWorker) probeStatuses(o plan.Observed) map[string]plan.ProbeStatus {
	out := map[string]plan.ProbeStatus{}
	seen := map[string]bool{}
	for _, c := range o.Containers {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		newest := o.Instances(c.Name)[0]
		st, tracked := w.deps.probes.Status(newest.ID)
		if !tracked {
			continue
		}
		out[c.Name] = plan.ProbeStatus{
			ContainerID: newest.ID, Started: st.Started, Ready: st.Ready,
			LivenessFailed: st.LivenessFailed, StartupFailed: st.StartupFailed,
		}
	}
	return out
}

// backoffs tells the planner until when each crashed container is held
// back: its newest exited instance's finish time plus its current delay.
func (w *podWorker) backoffs(pod *v1.Pod, o plan.Observed) map[string]time.Time {
	out := map[string]time.Time{}
	now := w.deps.clock.Now()
	for _, c := range allSpecContainers(pod) {
		last := newestExited(o, c.Name)
		if last == nil {
			continue
		}
		key := backoff.Key(w.uid, c.Name, podspec.ContainerHash(c))
		if until := w.deps.crashBackoff.Until(key, last.FinishedAt, now); !until.IsZero() {
			out[c.Name] = until
		}
	}
	return out
}

// allSpecContainers lists the init, regular and ephemeral containers.
func allSpecContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// trackProbes hands the running containers of the current sandbox to the
// probe manager and takes back those that stopped.
func (w *podWorker) trackProbes(pod *v1.Pod, obs observation) {
	sb, hasSandbox := obs.current()
	running := map[string]bool{}
	for _, c := range obs.plan.Containers {
		if c.State != plan.StateRunning || !hasSandbox || c.SandboxID != sb.ID {
			continue
		}
		spec, _, found := podspec.FindContainer(pod, c.Name)
		if !found {
			continue
		}
		running[c.ID] = true
		target := probe.Target{PodIP: sb.IP, HostNetwork: sb.HostNetwork, ContainerID: c.ID, Container: spec}
		if err := w.deps.probes.Add(w.uid, target, c.StartedAt); err != nil {
			w.deps.log.Debug("probe manager: add", "pod", w.uid, "container", c.Name, "error", err)
		}
	}
	w.mu.Lock()
	previous := w.probed
	w.probed = running
	w.mu.Unlock()
	for id := range previous {
		if !running[id] {
			w.deps.probes.Remove(id)
		}
	}
}

// snapshotPod is a copy of the desired pod.
func (w *podWorker) snapshotPod() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.desired.pod.DeepCopy()
}

func (w *podWorker) logPathsCopy() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.logPaths))
	for k, v := range w.logPaths {
		out[k] = v
	}
	return out
}
