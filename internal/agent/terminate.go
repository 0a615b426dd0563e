package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
)

// terminate stops and removes a deleted pod: its status, preStop hooks and stops
// within what is left of the grace period (regular containers together,
// then sidecars one by one in reverse order), then the sandboxes are
// stopped and removed and the volumes, logs and pod directories go. It
// reports the pod finished once the runtime holds nothing of it; a pod
// applied again meanwhile starts over instead.
func (w *podWorker) terminate(ctx context.Context, d desiredPod, obs observation) (time.Duration, bool) {
	if d.failure == nil {
		// As kubelet's syncTerminatingPod, the status first: it shows the
		// generation the deletion made (a failed pod keeps its final one).
		w.updateStatus(d, obs, plan.Actions{})
	}
	w.stopAll(ctx, d.pod, obs, d.pod.DeletionTimestamp.Time)
	if !w.removeSandboxes(ctx, d, obs) {
		return retryAfterFailure, false
	}
	w.deps.probes.RemovePod(w.uid)
	if err := w.cleanUpHost(d); err != nil {
		w.record(agentapi.EventWarning, "FailedUnmount", "", err.Error())
		return retryAfterFailure, false
	}
	if w.restartIfReapplied() {
		return 0, false
	}
	w.deps.log.Info("pod removed", "pod", d.key(), "uid", w.uid)
	return 0, true
}

// stopAll stops the pod's containers in plan.StopOrder, each within what
// is left until deadline.
func (w *podWorker) stopAll(ctx context.Context, pod *v1.Pod, obs observation, deadline time.Time) {
	for _, group := range plan.StopOrder(pod, obs.plan) {
		var wg sync.WaitGroup
		for _, c := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kill := plan.Kill{ID: c.ID, Name: c.Name, Type: c.Type, Reason: plan.KillPodDone}
				w.killContainer(ctx, pod, obs, kill, max(deadline.Sub(w.deps.clock.Now()), 0))
			}()
		}
		wg.Wait()
	}
}

// removeSandboxes stops and removes every sandbox of the pod (with their
// containers); it reports whether the runtime holds nothing of it now.
func (w *podWorker) removeSandboxes(ctx context.Context, d desiredPod, obs observation) bool {
	for _, sb := range obs.plan.Sandboxes {
		if err := w.deps.runtime.StopPodSandbox(ctx, sb.ID); err != nil && !criclient.IsNotFound(err) {
			w.record(agentapi.EventWarning, "FailedKillPod", "", "error stopping sandbox "+sb.ID+": "+err.Error())
			return false
		}
		if err := w.deps.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !criclient.IsNotFound(err) {
			w.record(agentapi.EventWarning, "FailedKillPod", "", "error removing sandbox "+sb.ID+": "+err.Error())
			return false
		}
	}
	// Containers outside any sandbox of the pod (the runtime lost the
	// sandbox) are removed one by one.
	for _, c := range obs.plan.Containers {
		_ = w.deps.runtime.RemoveContainer(ctx, c.ID) // checked by the observation below
	}
	left, err := w.deps.observe(ctx, w.uid)
	if err != nil || len(left.plan.Sandboxes)+len(left.plan.Containers)+len(left.foreign) > 0 {
		w.deps.log.Debug("terminate: the runtime still holds parts of the pod", "pod", d.key(), "error", err)
		return false
	}
	return true
}

// cleanUpHost removes what the agent made on the host for the pod: its
// directory with the volumes (unmounted first), its sources in the store,
// its user namespace's block of host ids, its log directory and its
// cgroup.
func (w *podWorker) cleanUpHost(d desiredPod) error {
	if err := w.deps.volumes.Teardown(w.uid); err != nil {
		return err
	}
	if err := w.deps.sources.Remove(w.uid); err != nil {
		return err
	}
	// The sandboxes are gone: no process runs on the pod's host ids.
	if err := w.deps.userNamespaces.Release(w.uid); err != nil {
		return err
	}
	if safeName(d.pod.Namespace) && safeName(d.pod.Name) && safeName(w.uid) {
		logDir := podspec.PodLogDirectory(w.deps.podLogDir, d.pod.Namespace, d.pod.Name, w.uid)
		if err := os.RemoveAll(logDir); err != nil {
			return fmt.Errorf("pod log directory: %w", err)
		}
	}
	if pc := w.deps.podCgroups; pc != nil {
		if err := pc.Remove(context.Background(), d.pod); err != nil {
			w.deps.log.Warn("pod cgroup left behind", "pod", d.key(), "error", err) // the pod is gone either way
		}
	}
	w.mu.Lock()
	w.volumesVersion, w.volumePaths, w.probed = -1, nil, nil
	w.mu.Unlock()
	return nil
}

// restartIfReapplied turns a terminated pod that was applied again while
// it terminated back into a fresh pod.
func (w *podWorker) restartIfReapplied() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.desired.reapply {
		return false
	}
	pod := w.desired.pod
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = nil, nil
	pod.Status = v1.PodStatus{}
	w.desired.reapply = false
	w.desired.failure, w.failedDone = nil, false
	w.synced = false
	w.keptIPs = nil
	w.waiting = map[string]podstatus.Waiting{}
	w.deps.log.Info("pod applied again while it terminated: starting it again", "pod", w.key, "uid", w.uid)
	return true
}

// safeName reports whether s can name a directory without leaving its
// parent (a recovered orphan's names come from the runtime, unchecked).
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}
