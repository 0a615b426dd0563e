package podspec

import (
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

// QOSClass is the pod's quality of service class by the kubelet's rules. It
// is berth's one QoS rule: the pod status, the cgroup parent and
// oom_score_adj all read it. Only cpu and memory count; a zero quantity
// counts as unset, and a missing request as its limit (the API's defaulting,
// so the class is the same whether or not the pod was defaulted):
//
//   - BestEffort: no container, init containers included, requests or
//     limits either;
//   - Guaranteed: every container limits both, and the summed requests
//     equal the summed limits;
//   - Burstable: anything else.
//
// When pod-level resources (spec.resources) set cpu or memory, they alone
// decide, by the same rules applied to the pod as a whole. The class is
// computed from the spec, never read from pod.status.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if r := pod.Spec.Resources; r != nil {
		requests, limits := qosRequests(*r), qosQuantities(r.Limits)
		if len(requests) > 0 || len(limits) > 0 {
			return classifyQOS(requests, limits, len(limits) == 2)
		}
	}
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	everyLimitSet := true
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			own := qosQuantities(list[i].Resources.Limits)
			addInto(requests, qosRequests(list[i].Resources))
			addInto(limits, own)
			everyLimitSet = everyLimitSet && len(own) == 2
		}
	}
	return classifyQOS(requests, limits, everyLimitSet)
}

// classifyQOS applies the rules once requests and limits are summed;
// limitsComplete says whether cpu and memory limits are set everywhere they
// must be.
func classifyQOS(requests, limits v1.ResourceList, limitsComplete bool) v1.PodQOSClass {
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if !limitsComplete || len(requests) != len(limits) {
		return v1.PodQOSBurstable
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			return v1.PodQOSBurstable
		}
	}
	return v1.PodQOSGuaranteed
}

// qosRequests is the positive cpu and memory requests of r, a request not
// written taken from its limit.
func qosRequests(r v1.ResourceRequirements) v1.ResourceList {
	out := qosQuantities(r.Requests)
	for name, limit := range qosQuantities(r.Limits) {
		if _, written := r.Requests[name]; !written {
			out[name] = limit
		}
	}
	return out
}

// qosQuantities keeps the positive cpu and memory quantities of list.
func qosQuantities(list v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if q, ok := list[name]; ok && q.Sign() > 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
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
