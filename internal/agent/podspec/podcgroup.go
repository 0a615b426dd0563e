package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodCgroupConfig is what goes into a pod's own cgroup (the parent of its
// containers' cgroups) before its sandbox exists, as kubelet's
// ResourceConfigForPod sizes it.
type PodCgroupConfig struct {
	CPUShares uint64 // the pod's CPU requests (2 for BestEffort)
	CPUQuota  int64  // µs per CPUPeriod; 0: no CPU limit
	CPUPeriod uint64 // µs, with CPUQuota
	Memory    int64  // bytes; 0: no memory limit
	// HugePages maps a page size as the kernel's hugetlb files name it
	// ("2MB", "1GB") to the pod's hugepages-<size> requests in bytes.
	HugePages map[string]int64
}

// PodCgroup sizes the pod's cgroup as kubelet does: the CPU weight from
// its requests; a CPU quota and a memory limit for a Guaranteed pod, and
// for a Burstable one only where every container (or the pod-level
// resources) declares that limit, else one container without a limit
// would be capped by the others' sum; nothing but the minimum weight for
// a BestEffort pod. Requests and limits are kubelet's pod totals (init
// containers, sidecars, pod-level resources and overhead counted).
func PodCgroup(pod *v1.Pod) PodCgroupConfig {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memoryDeclared := limitsDeclared(pod)
	cpuReq, cpuLim, memLim := reqs[v1.ResourceCPU], limits[v1.ResourceCPU], limits[v1.ResourceMemory]
	cfg := PodCgroupConfig{
		CPUShares: uint64(CPUShares(cpuReq.MilliValue())),
		HugePages: hugePageRequests(reqs),
	}
	switch QOSClass(pod) {
	case v1.PodQOSBestEffort:
		cfg.CPUShares = minCPUShares
		return cfg
	case v1.PodQOSGuaranteed:
		cpuDeclared, memoryDeclared = true, true
	}
	if cpuDeclared {
		cfg.CPUQuota, cfg.CPUPeriod = CPUQuota(cpuLim.MilliValue(), cpuPeriodMicros), cpuPeriodMicros
	}
	if memoryDeclared {
		cfg.Memory = memLim.Value()
	}
	return cfg
}

// limitsDeclared reports whether every container declares a CPU limit and
// a memory limit, or the pod-level resources do.
func limitsDeclared(pod *v1.Pod) (cpu, memory bool) {
	cpu, memory = true, true
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Resources.Limits.Cpu().IsZero() {
				cpu = false
			}
			if list[i].Resources.Limits.Memory().IsZero() {
				memory = false
			}
		}
	}
	if pod.Spec.Resources != nil {
		cpu = cpu || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memory = memory || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	return cpu, memory
}

// ValidUID reports whether a pod uid can name its cgroup: letters,
// digits, '-' and '_' only (the API server's are UUIDs, the agent's 32 hex
// digits; a uid read back from a sandbox's labels may be anything).
func ValidUID(uid types.UID) bool {
	return uid != "" && strings.Trim(string(uid), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

// CPUWeight is cgroup v2's cpu.weight for cgroup v1 cpu shares, by
// kubelet's linear mapping (its pod and QoS cgroups use it): 2 → 1,
// 262144 → 10000, 1024 → 39.
func CPUWeight(shares uint64) uint64 {
	shares = min(max(shares, minCPUShares), maxCPUShares)
	return 1 + (shares-minCPUShares)*9999/(maxCPUShares-minCPUShares)
}

// hugePageRequests maps hugepages-<size> requests to the kernel's page
// size names: hugepages-2Mi → "2MB", hugepages-1Gi → "1GB".
func hugePageRequests(reqs v1.ResourceList) map[string]int64 {
	out := map[string]int64{}
	for name, q := range reqs {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		if kernel := kernelPageSize(size); kernel != "" {
			out[kernel] = q.Value()
		}
	}
	return out
}

// kernelPageSize turns a quantity suffix (2Mi, 1Gi, 64Ki) into the
// hugetlb file name's form (2MB, 1GB, 64KB); "" when it is none of these.
func kernelPageSize(size string) string {
	for _, unit := range []struct{ quantity, kernel string }{{"Ki", "KB"}, {"Mi", "MB"}, {"Gi", "GB"}} {
		if n, ok := strings.CutSuffix(size, unit.quantity); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return n + unit.kernel
		}
	}
	return ""
}
