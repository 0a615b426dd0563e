package nodefit

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// kubelet's admission reasons for a pod the node has no room for
// (pkg/kubelet/lifecycle/predicate.go): "OutOf" and the resource.
const (
	ReasonOutOfPods             = "OutOfpods"
	ReasonOutOfCPU              = "OutOfcpu"
	ReasonOutOfMemory           = "OutOfmemory"
	ReasonOutOfEphemeralStorage = "OutOfephemeral-storage"
)

// DefaultMaxPods is kubelet's default --max-pods.
const DefaultMaxPods = 110

// resourceFitErrorFormat is the scheduler's FitError on one node for a
// pod NodeResourcesFit refused: the plugin's reasons, then the
// PostFilters' (dynamic resources, then preemption, which finds no pod
// of a lower priority to evict on berth's node).
const resourceFitErrorFormat = "0/1 nodes are available: %s. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."

// Resources are amounts of what the scheduler counts on a node: pods,
// CPU (millicores), memory and ephemeral storage (bytes).
type Resources struct {
	Pods, MilliCPU, Memory, EphemeralStorage int64
}

// Add adds r2 to r.
func (r *Resources) Add(r2 Resources) {
	r.Pods += r2.Pods
	r.MilliCPU += r2.MilliCPU
	r.Memory += r2.Memory
	r.EphemeralStorage += r2.EphemeralStorage
}

// ResourcesOf reads a node's capacity or allocatable.
func ResourcesOf(list v1.ResourceList) Resources {
	return Resources{
		Pods: list.Pods().Value(), MilliCPU: list.Cpu().MilliValue(),
		Memory: list.Memory().Value(), EphemeralStorage: list.StorageEphemeral().Value(),
	}
}

// Requests is what one pod takes of a node, as the scheduler and
// kubelet's admission compute it (component-helpers' PodRequests): one
// pod, and the larger of its init containers' peak and its long-running
// containers' sum (sidecars included), or its pod-level requests, with
// its overhead.
func Requests(pod *v1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return Resources{
		Pods: 1, MilliCPU: reqs.Cpu().MilliValue(),
		Memory: reqs.Memory().Value(), EphemeralStorage: reqs.StorageEphemeral().Value(),
	}
}

// Room is the node's allocatable and what the pods admitted to it (and
// not yet terminated) request together, Requested.Pods being their count.
type Room struct {
	Allocatable, Requested Resources
}

// Insufficient is one resource the node has too little of for a pod.
type Insufficient struct {
	Resource                  v1.ResourceName
	Requested, Used, Capacity int64
}

// Missing lists what the node lacks for the pod, in the order of the
// scheduler's NodeResourcesFit: the pod count first, then CPU, memory
// and ephemeral storage, each only when the pod requests some.
func (r Room) Missing(pod *v1.Pod) []Insufficient {
	req := Requests(pod)
	var out []Insufficient
	if r.Requested.Pods+1 > r.Allocatable.Pods {
		out = append(out, Insufficient{v1.ResourcePods, 1, r.Requested.Pods, r.Allocatable.Pods})
	}
	for _, c := range []struct {
		name                 v1.ResourceName
		want, used, capacity int64
	}{
		{v1.ResourceCPU, req.MilliCPU, r.Requested.MilliCPU, r.Allocatable.MilliCPU},
		{v1.ResourceMemory, req.Memory, r.Requested.Memory, r.Allocatable.Memory},
		{v1.ResourceEphemeralStorage, req.EphemeralStorage, r.Requested.EphemeralStorage, r.Allocatable.EphemeralStorage},
	} {
		if c.want > 0 && c.want > c.capacity-c.used {
			out = append(out, Insufficient{c.name, c.want, c.used, c.capacity})
		}
	}
	return out
}

// AdmitResources is kubelet's admission of the pod against the room
// left on the node: the first resource it lacks is the reason
// (OutOfpods, OutOfcpu, ...) with kubelet's InsufficientResourceError
// message.
func (r Room) AdmitResources(pod *v1.Pod) Result {
	missing := r.Missing(pod)
	if len(missing) == 0 {
		return Result{Admit: true}
	}
	m := missing[0]
	return Result{
		Reason: "OutOf" + string(m.Resource),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			m.Resource, m.Requested, m.Used, m.Capacity),
	}
}

// ScheduleResources is the scheduler's NodeResourcesFit filter on one
// node: a pod the node lacks room for is Unschedulable with every
// reason ("Too many pods", "Insufficient cpu", ...) in the FitError,
// sorted as the scheduler sorts its reasons' histogram.
func (r Room) ScheduleResources(pod *v1.Pod) Result {
	missing := r.Missing(pod)
	if len(missing) == 0 {
		return Result{Admit: true}
	}
	reasons := make([]string, len(missing))
	for i, m := range missing {
		reasons[i] = "1 Insufficient " + string(m.Resource)
		if m.Resource == v1.ResourcePods {
			reasons[i] = "1 Too many pods"
		}
	}
	sort.Strings(reasons)
	return Result{Reason: ReasonUnschedulable, Message: fmt.Sprintf(resourceFitErrorFormat, strings.Join(reasons, ", "))}
}
