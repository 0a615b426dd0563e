package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/nodefit"
)

// The node's capacity: --max-pods pods, and its allocatable CPU, memory
// and ephemeral storage (nodeResources). kubelet's admission refuses a
// bound pod the node has no room left for (OutOfpods, OutOfcpu, ...),
// and the scheduler berth plays keeps its controllers' pods Pending
// until there is room (schedule.go). Room is what admitted pods that
// have not terminated leave, as kubelet's filterOutInactivePods counts
// them.

// nodeRoomLocked is the node's allocatable and what the pods it admitted
// and that have not terminated request together, leaving out the pod of
// uid replaced (one whose new manifest takes its place, one for one).
func (a *Agent) nodeRoomLocked(replaced string) nodefit.Room {
	_, allocatable := a.nodeResources()
	room := nodefit.Room{Allocatable: nodefit.ResourcesOf(allocatable)}
	for uid, w := range a.workers {
		if uid == replaced {
			continue
		}
		if req, ok := w.occupies(); ok {
			room.Requested.Add(req)
		}
	}
	return room
}

// occupies is what the pod takes of the node, and whether it takes any:
// a pod bound and admitted counts until it has terminated (a finished
// pod, Succeeded or Failed, no longer does, also while it is deleted,
// as kubelet's filterOutInactivePods drops it; one being deleted or
// evicted counts until its worker has stopped it). A pod waiting for the
// scheduler or rejected at admission never ran and takes nothing.
func (w *podWorker) occupies() (nodefit.Resources, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := &w.desired
	switch {
	case d.unscheduled != nil:
		return nodefit.Resources{}, false
	case d.failure != nil && (d.failure.rejected || w.failedDone):
		return nodefit.Resources{}, false
	case d.failure == nil && w.synced && (w.status.Phase == v1.PodSucceeded || w.status.Phase == v1.PodFailed):
		return nodefit.Resources{}, false
	}
	return w.requests, true
}
