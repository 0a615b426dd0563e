package agent

import (
	"context"
	"fmt"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/probe"
)

// dispatchProbeUpdates brings the status of the pod whose probe result
// changed up to date at once, and wakes its worker (a liveness or startup
// failure asks for a restart).
func (a *Agent) dispatchProbeUpdates(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case u, ok := <-a.deps.probes.Updates():
			if !ok {
				return
			}
			if w := a.worker(u.PodUID); w != nil {
				w.applyProbeResults()
				w.trigger()
			}
		}
	}
}

// probeAttempt records kubelet's Unhealthy event for a failed probe.
func (a *Agent) probeAttempt(at probe.Attempt) {
	if at.Result != probe.Failure && !at.Warning {
		return
	}
	w := a.worker(at.PodUID)
	if w == nil {
		return
	}
	object := containerObject(w.snapshotPod(), at.ContainerName)
	if at.Warning {
		w.record(agentapi.EventWarning, "ProbeWarning", object, fmt.Sprintf("%s probe warning: %s", at.Kind, at.Message))
		return
	}
	w.record(agentapi.EventWarning, "Unhealthy", object, fmt.Sprintf("%s probe failed: %s", at.Kind, at.Message))
}
