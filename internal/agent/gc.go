package agent

import (
	"context"
	"time"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// ContainerGCPolicy is kubelet's container garbage collection policy (its
// flags, in brackets).
type ContainerGCPolicy struct {
	// MinAge: an exited container created less long ago is kept
	// (--minimum-container-ttl-duration, 0).
	MinAge time.Duration
	// MaxPerPodContainer exited instances of each container of a pod are
	// kept besides its newest instance (--maximum-dead-containers-per-container,
	// 1: `logs --previous` and lastState); negative: all.
	MaxPerPodContainer int
	// MaxContainers bounds the exited instances kept on the node, the
	// newest instance of each container aside (--maximum-dead-containers,
	// -1: no bound).
	MaxContainers int
}

// DefaultContainerGCPolicy is kubelet's.
func DefaultContainerGCPolicy() ContainerGCPolicy {
	return ContainerGCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
}

// DefaultContainerGCPeriod is how often kubelet collects containers.
const DefaultContainerGCPeriod = time.Minute

// containerGC sorts one pod's containers: remove is what the policy lets
// go; spare is what it keeps only because of MaxPerPodContainer (exited,
// old enough, not the newest instance), newest first, for MaxContainers.
// The newest instance of each container name stays whatever its state
// (the planner and the pod's status read it), and so does every container
// that has not exited.
func containerGC(obs plan.Observed, policy ContainerGCPolicy, now time.Time) (remove, spare []plan.Container) {
	done := map[string]bool{}
	for _, c := range obs.Containers {
		if done[c.Name] {
			continue
		}
		done[c.Name] = true
		kept := 0
		for i, inst := range obs.Instances(c.Name) {
			switch {
			case i == 0 || inst.State != plan.StateExited || now.Sub(inst.CreatedAt) < policy.MinAge:
			case policy.MaxPerPodContainer < 0 || kept < policy.MaxPerPodContainer:
				kept++
				spare = append(spare, inst)
			default:
				remove = append(remove, inst)
			}
		}
	}
	return remove, spare
}

// removeOldContainers is the kubelet's container garbage collection for one
// pod, run after each of its syncs and by the periodic collection
// (containerGC's rule); the removed containers' log files go with them. A
// sandbox that is neither the current one nor ready goes once no container
// of it is left.
func (w *podWorker) removeOldContainers(ctx context.Context, obs observation) {
	remove, _ := containerGC(obs.plan, w.deps.containerGC, w.deps.clock.Now())
	w.removeContainers(ctx, obs, remove)
}

// removeContainers removes the given containers of the pod and their log
// files, then the pod's superseded sandboxes left empty.
func (w *podWorker) removeContainers(ctx context.Context, obs observation, remove []plan.Container) {
	gone := map[string]bool{}
	paths := obs.logPaths(w.logDirectory())
	for _, c := range remove {
		if err := w.deps.runtime.RemoveContainer(ctx, c.ID); err != nil && !criclient.IsNotFound(err) {
			w.deps.log.Debug("remove old container", "pod", w.uid, "container", c.ID, "error", err)
			continue
		}
		gone[c.ID] = true
		w.deps.log.Debug("container garbage collected", "pod", w.uid, "container", c.Name, "id", c.ID)
		if p := paths[c.ID]; p != "" {
			if err := logrotate.RemoveLog(w.deps.podLogDir, p); err != nil {
				w.deps.log.Debug("remove old container's log", "pod", w.uid, "container", c.ID, "error", err)
			}
		}
	}
	remaining := map[string]int{}
	for _, c := range obs.plan.Containers {
		if !gone[c.ID] {
			remaining[c.SandboxID]++
		}
	}
	w.removeOldSandboxes(ctx, obs, remaining)
}

// removeOldSandboxes removes the pod's stopped, superseded sandboxes that
// hold no container any more.
func (w *podWorker) removeOldSandboxes(ctx context.Context, obs observation, remaining map[string]int) {
	current, ok := obs.current()
	if !ok {
		return
	}
	for _, sb := range obs.plan.Sandboxes {
		if sb.ID == current.ID || sb.Ready || remaining[sb.ID] > 0 {
			continue
		}
		if err := w.deps.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !criclient.IsNotFound(err) {
			w.deps.log.Debug("remove old sandbox", "pod", w.uid, "sandbox", sb.ID, "error", err)
		}
	}
}

// logDirectory is the pod's log directory.
func (w *podWorker) logDirectory() string {
	pod := w.snapshotPod()
	return podspec.PodLogDirectory(w.deps.podLogDir, pod.Namespace, pod.Name, w.uid)
}
