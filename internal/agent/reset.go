package agent

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/plan"
)

// resetStopTimeout is how long a container RestartAllContainers kills gets
// between SIGTERM and SIGKILL: kubelet kills them with no grace period,
// which its minimum grace period of 2 s rounds up; no preStop hook runs.
const resetStopTimeout = 2 * time.Second

// resetContainers is kubelet's ContainersToReset step of SyncPod for
// RestartAllContainers: the instances that may still run are stopped
// (together: they all go anyway; kubelet stops them one by one), then every
// instance is removed in the plan's order, the ones that triggered the
// restart last, so that an agent stopped midway finds the trigger again.
// Their log files stay (kubelet keeps them until the pod goes): the next
// instances' restart counts continue from them. The first failure ends the
// step; the next sync plans the rest again. It reports whether every
// instance is gone.
func (w *podWorker) resetContainers(ctx context.Context, pod *v1.Pod, acts plan.Actions) bool {
	w.record(agentapi.EventNormal, "RestartAllContainers", "", "Restarting all containers in place: "+acts.RestartAll)
	if !w.stopForReset(ctx, pod, acts) {
		return false
	}
	for _, r := range acts.ContainersToReset {
		if err := w.deps.runtime.RemoveContainer(ctx, r.ID); err != nil && !criclient.IsNotFound(err) {
			w.record(agentapi.EventWarning, "FailedKillPod", containerObject(pod, r.Name),
				fmt.Sprintf("RestartAllContainers: error removing container %s (%s) of pod %s: %v", r.Name, r.ID, w.key, err))
			return false
		}
		w.deps.probes.Remove(r.ID)
		w.clearWaiting(r.Name)
	}
	return true
}

// stopForReset stops the instances of the reset that may still run, in
// parallel, and reports whether all stopped.
func (w *podWorker) stopForReset(ctx context.Context, pod *v1.Pod, acts plan.Actions) bool {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	for _, r := range acts.ContainersToReset {
		if !r.Kill {
			continue
		}
		object := containerObject(pod, r.Name)
		w.record(agentapi.EventNormal, "Killing", object,
			fmt.Sprintf("Stopping container %s: all the pod's containers restart (%s)", r.Name, acts.RestartAll))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.deps.runtime.StopContainer(ctx, r.ID, resetStopTimeout)
			if err == nil || criclient.IsNotFound(err) {
				return
			}
			w.record(agentapi.EventWarning, "FailedKillPod", object,
				fmt.Sprintf("RestartAllContainers: error killing container %s (%s) of pod %s: %v", r.Name, r.ID, w.key, err))
			mu.Lock()
			ok = false
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ok
}

// logNamePattern is a container log file's name: <restartCount>.log, then
// whatever rotation appends.
var logNamePattern = regexp.MustCompile(`^([0-9]+)\.log`)

// restartCount is the restart count of the instance s starts: the plan's,
// unless no instance of the container is left in the runtime
// (RestartAllContainers removed them, or the runtime lost them); then, as
// kubelet does, one more than the highest count among the container's log
// files in dir, 0 without any.
func restartCount(s plan.Start, o plan.Observed, dir string) int {
	if s.RestartCount > 0 || len(o.Instances(s.Name)) > 0 {
		return s.RestartCount
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s.RestartCount
	}
	next := 0
	for _, e := range entries {
		m := logNamePattern.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			continue
		}
		if n, err := strconv.Atoi(m[1]); err == nil {
			next = max(next, n+1)
		}
	}
	return next
}
