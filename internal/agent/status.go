package agent

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/plan"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/podstatus"
)

// A worker's status has two writers, as the kubelet's status manager has:
// the sync computes it whole from what the runtime holds (setStatus), and
// a probe result changes its started/ready and the Ready conditions at
// once (applyProbeResults), even while a sync is held up for a whole grace
// period killing another container. Both read the probe manager's results
// under w.mu: the manager stores a result before it reports it, so a result
// either reaches the sync's read or is applied after that sync wrote its
// status; none is lost.

// updateStatus computes the pod's status from what the runtime holds now,
// and keeps the pod's IPs in the agent's store when they are new.
func (w *podWorker) updateStatus(d desiredPod, obs observation, acts plan.Actions) {
	w.setStatus(d, obs, acts, false)
	w.keepPodIPs(d, obs)
}

// adoptStatus gives a recovered pod the status of what the runtime held
// at recovery, unless its worker has synced already.
func (w *podWorker) adoptStatus(d desiredPod, obs observation) {
	w.setStatus(d, obs, plan.Actions{}, true)
}

// setStatus computes the status from obs; onlyFirst leaves a status a sync
// computed alone. Before the first status, the previous one is what the
// store kept: the pod's IPs.
func (w *podWorker) setStatus(d desiredPod, obs observation, acts plan.Actions, onlyFirst bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if onlyFirst && w.synced {
		return
	}
	defer w.tellIfChanged(w.synced)()
	previous := &v1.PodStatus{PodIPs: toPodIPs(w.keptIPs)}
	if w.synced {
		previous = &w.status
	}
	w.status = podstatus.Compute(podstatus.Input{
		Pod: d.pod, Observed: obs.plan, Probes: w.probeStatuses(obs.plan), Waiting: w.waiting,
		Previous: previous, Terminal: acts.Done, HostIPs: w.deps.node.hostIPs, Now: w.deps.clock.Now(),
		RuntimeName: w.deps.runtimeName,
	})
	w.synced = true
	w.logPaths = obs.logPaths(podspec.PodLogDirectory(w.deps.podLogDir, d.pod.Namespace, d.pod.Name, w.uid))
}

// applyProbeResults brings the status up to date with the probe manager's
// results for the containers it shows, without waiting for a sync.
func (w *podWorker) applyProbeResults() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced {
		return
	}
	defer w.tellIfChanged(true)()
	probes := map[string]plan.ProbeStatus{}
	for _, list := range [][]v1.ContainerStatus{w.status.InitContainerStatuses, w.status.ContainerStatuses} {
		for _, st := range list {
			id := podstatus.RawContainerID(st.ContainerID)
			if result, tracked := w.deps.probes.Status(id); tracked && id != "" {
				probes[st.Name] = plan.ProbeStatus{ContainerID: id, Started: result.Started, Ready: result.Ready}
			}
		}
	}
	podstatus.UpdateProbes(&w.status, w.desired.pod, probes, w.deps.clock.Now())
}

// tellIfChanged returns what tells the agent, once the status under w.mu
// has been changed, that what a workload controller sees of the pod
// (controllerView) changed, or that it has a status for the first time
// (had: false). Called, and its result deferred, under w.mu.
func (w *podWorker) tellIfChanged(had bool) func() {
	before := controllerView(&v1.Pod{Status: w.status})
	return func() {
		after := controllerView(&v1.Pod{Status: w.status})
		if w.deps.statusChanged != nil && (!had || !sameControllerView(before, after)) {
			w.deps.statusChanged()
		}
	}
}

// keepPodIPs saves the IPs of the pod's ready sandbox in the agent's store
// when they are not what it holds, so that the status of the pod keeps
// them once the sandbox is stopped, across a restart of the agent too. A
// failure is logged; the next sync tries again.
func (w *podWorker) keepPodIPs(d desiredPod, obs observation) {
	sb, ok := obs.current()
	if !ok || !sb.Ready || sb.IP == "" || sb.HostNetwork || d.terminating() {
		return
	}
	ips := append([]string{sb.IP}, sb.AdditionalIPs...)
	w.mu.Lock()
	same := slices.Equal(ips, w.keptIPs)
	w.mu.Unlock()
	if same {
		return
	}
	if err := w.deps.sources.SavePodIPs(w.uid, ips); err != nil {
		w.deps.log.Warn("keep the pod's IPs", "pod", d.key(), "error", err)
		return
	}
	w.mu.Lock()
	w.keptIPs = ips
	w.mu.Unlock()
}

func toPodIPs(ips []string) []v1.PodIP {
	var out []v1.PodIP
	for _, ip := range ips {
		out = append(out, v1.PodIP{IP: ip})
	}
	return out
}

// view is the pod as the API shows it: as applied, with its status.
func (w *podWorker) view() v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	pod := w.desired.pod.DeepCopy()
	if u := w.desired.unscheduled; u != nil {
		pod.Status = unscheduledStatus(pod, u) // not placed: nothing of it runs
	} else if w.synced {
		pod.Status = *w.status.DeepCopy()
	} else {
		// Not synced yet: nothing of it runs, and the agent has acted on
		// no generation of it.
		pod.Status = podstatus.Compute(podstatus.Input{
			Pod: pod, Previous: &v1.PodStatus{PodIPs: toPodIPs(w.keptIPs)},
			HostIPs: w.deps.node.hostIPs, RuntimeName: w.deps.runtimeName, Now: w.deps.clock.Now(),
		})
		pod.Status.ObservedGeneration = 0
		for i := range pod.Status.Conditions {
			pod.Status.Conditions[i].ObservedGeneration = 0
		}
	}
	return *pod
}
