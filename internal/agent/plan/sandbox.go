package plan

import v1 "k8s.io/api/core/v1"

// SandboxDecision is the outcome of SandboxChanged.
type SandboxDecision struct {
	// Recreate is true when the pod needs a new sandbox.
	Recreate bool
	// Reason says why (empty when Recreate is false; PodSandboxMissing when there is none).
	Reason PodKillReason
	// Attempt is the attempt of the sandbox to create (highest seen + 1, 0 when none
	// exists), or the highest attempt seen when Recreate is false.
	Attempt uint32
	// Current is the ID of the newest sandbox ("" when none).
	Current string
}

// SandboxChanged is the kubelet's podSandboxChanged: the pod needs a new sandbox when it
// has none, when more than one is ready, when the newest is not ready, when the newest's
// network namespace mode differs from spec.hostNetwork, or when a pod-network sandbox
// has no IP.
func SandboxChanged(pod *v1.Pod, o Observed) SandboxDecision {
	sorted := o.SortedSandboxes()
	if len(sorted) == 0 {
		return SandboxDecision{Recreate: true, Reason: PodSandboxMissing}
	}
	ready := 0
	var highest uint32
	for _, s := range sorted {
		if s.Ready {
			ready++
		}
		highest = max(highest, s.Attempt)
	}
	newest := sorted[0]
	d := SandboxDecision{Recreate: true, Attempt: highest + 1, Current: newest.ID}
	switch {
	case ready > 1:
		d.Reason = PodSandboxMultipleReady
	case !newest.Ready:
		d.Reason = PodSandboxNotReady
	case newest.HostNetwork != pod.Spec.HostNetwork:
		d.Reason = PodSandboxNetworkChanged
	case !pod.Spec.HostNetwork && newest.IP == "":
		d.Reason = PodSandboxNoIP
	default:
		return SandboxDecision{Attempt: highest, Current: newest.ID}
	}
	return d
}
