package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Constants of the kubelet's resource policy.
const (
	cpuPeriodMicros   = 100000 // CFS period
	minCPUQuotaMicros = 1000   // the kernel's minimum CFS quota
	minCPUShares      = 2
	maxCPUShares      = 262144

	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
	// defaultMemoryRequest stands in for a regular container's missing memory
	// request when a sidecar's oom_score_adj is compared with it (the
	// scheduler's default, 200 MiB).
	defaultMemoryRequest = 200 * 1024 * 1024
	// systemNodeCritical is the priority class whose pods get the lowest
	// oom_score_adj whatever their QoS.
	systemNodeCritical = "system-node-critical"
)

// QOSClass is the pod's quality of service class by the kubelet's rules
// (ComputePodQOS, with PodLevelResources and its QoS fix on, as they are
// by default). It is berth's one QoS rule: the pod status, the cgroup
// parent and oom_score_adj all read it. It is computed from the spec,
// never read from pod.status, and it is the same whether or not the pod
// was defaulted (the API server's defaults are applied here first):
//
//   - a container's class comes from its cpu and memory alone, a request
//     not written taken from its limit: Guaranteed when both are requested
//     and limited equally, BestEffort when neither is requested nor limited
//     (a zero quantity counts as none), Burstable otherwise;
//   - the pod is Guaranteed when every container (init containers and
//     sidecars included) is, BestEffort when every one is, else Burstable;
//   - pod-level resources decide alone when spec.resources names cpu,
//     memory or a hugepages size (as a request or a limit, zero included):
//     the pod is classed as one container would be, after the API server's
//     pod-level defaults (podLevelRequirements).
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if podLevelResourcesSet(pod) {
		return requirementsQOS(podLevelRequirements(pod))
	}
	var class v1.PodQOSClass
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			own := requirementsQOS(defaultedRequests(list[i].Resources), list[i].Resources.Limits)
			switch {
			case own == v1.PodQOSBurstable:
				return own
			case class == "":
				class = own
			case class != own:
				return v1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return v1.PodQOSBestEffort
	}
	return class
}

// qosResources are the resources a QoS class looks at.
var qosResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// requirementsQOS classes one set of requests and limits: per resource,
// equal and not zero is Guaranteed, both zero BestEffort, else Burstable;
// resources of different classes make Burstable.
func requirementsQOS(requests, limits v1.ResourceList) v1.PodQOSClass {
	var class v1.PodQOSClass
	for _, name := range qosResources {
		req, lim := requests[name], limits[name]
		own := v1.PodQOSGuaranteed
		switch {
		case req.Cmp(lim) != 0:
			return v1.PodQOSBurstable
		case req.IsZero():
			own = v1.PodQOSBestEffort
		}
		if class != "" && class != own {
			return v1.PodQOSBurstable
		}
		class = own
	}
	return class
}

// defaultedRequests is r's requests with each limit not requested added
// as its request (the API server's default for a container).
func defaultedRequests(r v1.ResourceRequirements) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range r.Limits {
		out[name] = q.DeepCopy()
	}
	for name, q := range r.Requests {
		out[name] = q.DeepCopy()
	}
	return out
}

// podLevelResourcesSet reports whether spec.resources names a resource
// pod-level resources support: cpu, memory, a hugepages size.
func podLevelResourcesSet(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, list := range []v1.ResourceList{r.Requests, r.Limits} {
		for name := range list {
			if name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				return true
			}
		}
	}
	return false
}

// podLevelRequirements is spec.resources' cpu and memory with the API
// server's pod-level defaults: a request not written is what the
// containers request together (PodRequests, their own defaults applied)
// when any of them requests it, else the pod-level limit; a limit not
// written, when every container limits that resource, is the larger of the
// pod-level request and what the containers limit together (PodLimits).
func podLevelRequirements(pod *v1.Pod) (requests, limits v1.ResourceList) {
	requests, limits = v1.ResourceList{}, v1.ResourceList{}
	withDefaults := pod.DeepCopy()
	for _, list := range [][]v1.Container{withDefaults.Spec.InitContainers, withDefaults.Spec.Containers} {
		for i := range list {
			list[i].Resources.Requests = defaultedRequests(list[i].Resources)
		}
	}
	fromContainers, containerLimits := PodRequests(withDefaults), PodLimits(withDefaults)
	own := pod.Spec.Resources
	for _, name := range qosResources {
		if q, ok := own.Limits[name]; ok {
			limits[name] = q.DeepCopy()
		}
		req, written := own.Requests[name]
		if !written {
			req, written = fromContainers[name]
		}
		if !written {
			req, written = own.Limits[name]
		}
		if !written {
			continue
		}
		requests[name] = req.DeepCopy()
		if _, limited := limits[name]; !limited && everyContainerLimits(pod, name) {
			lim := containerLimits[name]
			if req.Cmp(lim) > 0 {
				lim = req
			}
			limits[name] = lim.DeepCopy()
		}
	}
	return requests, limits
}

// everyContainerLimits reports whether every init and regular container
// limits the resource name.
func everyContainerLimits(pod *v1.Pod, name v1.ResourceName) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}

// OOMScoreAdj is the kubelet's oom_score_adj for a container: -997 for
// Guaranteed pods and system-node-critical ones, 1000 for BestEffort, and for
// Burstable 1000 - 1000*memoryRequest/nodeMemory kept within [3, 999]. A
// sidecar is scored by the smaller of its own request and the smallest
// regular container's (a missing request counting as 200 MiB), plus one when
// it has a memory request, so it dies before the containers it serves.
// nodeMemory <= 0 counts as unknown: the request then weighs nothing (999).
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, nodeMemory int64) int64 {
	if pod.Spec.PriorityClassName == systemNodeCritical {
		return guaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	own := c.Resources.Requests.Memory().Value()
	scored, bump := own, int64(0)
	if isInitContainerOf(pod, c) && IsSidecar(c) {
		ownOrDefault := int64(defaultMemoryRequest)
		if _, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
			ownOrDefault = own
		}
		scored = min(ownOrDefault, smallestRegularMemoryRequest(pod))
		if scored <= own {
			bump = 1
		}
	}
	adj := int64(bestEffortOOMScoreAdj)
	if nodeMemory > 0 {
		adj -= 1000 * scored / nodeMemory
	}
	adj += bump
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj >= bestEffortOOMScoreAdj {
		return bestEffortOOMScoreAdj - 1
	}
	return adj
}

func isInitContainerOf(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

func smallestRegularMemoryRequest(pod *v1.Pod) int64 {
	smallest := int64(-1)
	for _, c := range pod.Spec.Containers {
		req := int64(defaultMemoryRequest)
		if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
			req = q.Value()
		}
		if smallest < 0 || req < smallest {
			smallest = req
		}
	}
	if smallest < 0 {
		return defaultMemoryRequest
	}
	return smallest
}

// CPUShares converts a cpu request in millicores to cgroup cpu shares
// (1024 per core), at least 2 (the kernel minimum, also for no request).
func CPUShares(milliCPU int64) int64 {
	shares := milliCPU * 1024 / 1000
	if shares < minCPUShares {
		return minCPUShares
	}
	return min(shares, maxCPUShares)
}

// CPUQuota converts a cpu limit in millicores to a CFS quota over a period
// of period microseconds; 0 (no limit) stays 0, anything else is at least
// 1 ms.
func CPUQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, minCPUQuotaMicros)
}

// linuxResources is the kubelet's mapping of requests and limits to cgroup
// settings: shares from the cpu request (the limit when no request),
// quota/period from the cpu limit, the memory limit as is.
func linuxResources(cpuRequest, cpuLimit, memoryLimit resource.Quantity) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{CpuPeriod: cpuPeriodMicros}
	if cpuRequest.IsZero() && !cpuLimit.IsZero() {
		r.CpuShares = CPUShares(cpuLimit.MilliValue())
	} else {
		r.CpuShares = CPUShares(cpuRequest.MilliValue())
	}
	r.CpuQuota = CPUQuota(cpuLimit.MilliValue(), cpuPeriodMicros)
	r.MemoryLimitInBytes = memoryLimit.Value()
	return r
}

// containerResources is a container's cgroup settings, oom_score_adj included.
func containerResources(pod *v1.Pod, c *v1.Container, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	r := linuxResources(quantity(c.Resources.Requests, v1.ResourceCPU),
		quantity(c.Resources.Limits, v1.ResourceCPU), quantity(c.Resources.Limits, v1.ResourceMemory))
	r.OomScoreAdj = OOMScoreAdj(pod, c, nodeMemory)
	return r
}

func quantity(list v1.ResourceList, name v1.ResourceName) resource.Quantity {
	return list[name]
}
