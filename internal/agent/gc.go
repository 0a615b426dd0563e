package agent

import (
	"context"

	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// removeOldContainers is the kubelet's container garbage collection for one
// pod: of each container name the runtime keeps the newest instance and the
// newest exited one before it (its lastState, and `logs --previous`); older
// exited instances and their log files go. A sandbox that is neither the
// current one nor ready goes once no container of it is left.
func (w *podWorker) removeOldContainers(ctx context.Context, obs observation) {
	keep := map[string]bool{}
	done := map[string]bool{}
	for _, c := range obs.plan.Containers {
		if done[c.Name] {
			continue
		}
		done[c.Name] = true
		keptPrevious := false
		for i, inst := range obs.plan.Instances(c.Name) {
			switch {
			case i == 0 || inst.State != plan.StateExited:
				keep[inst.ID] = true
			case !keptPrevious:
				keep[inst.ID], keptPrevious = true, true
			}
		}
	}
	paths := obs.logPaths(w.logDirectory())
	remaining := map[string]int{}
	for _, c := range obs.plan.Containers {
		if keep[c.ID] {
			remaining[c.SandboxID]++
			continue
		}
		if err := w.deps.runtime.RemoveContainer(ctx, c.ID); err != nil && !criclient.IsNotFound(err) {
			w.deps.log.Debug("remove old container", "pod", w.uid, "container", c.ID, "error", err)
			remaining[c.SandboxID]++
			continue
		}
		if p := paths[c.ID]; p != "" {
			if err := logrotate.RemoveLog(w.deps.podLogDir, p); err != nil {
				w.deps.log.Debug("remove old container's log", "pod", w.uid, "container", c.ID, "error", err)
			}
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
