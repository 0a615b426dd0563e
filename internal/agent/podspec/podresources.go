package podspec

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodRequests is what the pod as a whole requests: the larger of what its
// long-running containers (regular ones and sidecars) request together and
// the peak of its init phase (each init container plus the sidecars started
// before it). Overhead is not included.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	return podTotal(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
}

// PodLimits is PodRequests for limits; a container without a limit adds
// nothing.
func PodLimits(pod *v1.Pod) v1.ResourceList {
	return podTotal(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Limits })
}

func podTotal(pod *v1.Pod, of func(*v1.Container) v1.ResourceList) v1.ResourceList {
	running := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addInto(running, of(&pod.Spec.Containers[i]))
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		step := v1.ResourceList{}
		if IsSidecar(c) {
			addInto(running, of(c))
			addInto(sidecars, of(c))
			addInto(step, sidecars)
		} else {
			addInto(step, of(c))
			addInto(step, sidecars)
		}
		maxInto(initPeak, step)
	}
	maxInto(running, initPeak)
	return running
}

func addInto(sum, list v1.ResourceList) {
	for name, q := range list {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
}

func maxInto(peak, list v1.ResourceList) {
	for name, q := range list {
		if cur, ok := peak[name]; !ok || q.Cmp(cur) > 0 {
			peak[name] = q.DeepCopy()
		}
	}
}

// sandboxResources are the pod-level cgroup settings the runtime may apply
// to the sandbox: the pod's requests and limits, overhead excluded.
func sandboxResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	req, lim := PodRequests(pod), PodLimits(pod)
	return linuxResources(req[v1.ResourceCPU], lim[v1.ResourceCPU], lim[v1.ResourceMemory])
}

// sandboxOverhead is pod.spec.overhead as cgroup settings, nil when unset.
func sandboxOverhead(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	if len(pod.Spec.Overhead) == 0 {
		return nil
	}
	cpu := pod.Spec.Overhead[v1.ResourceCPU]
	return linuxResources(cpu, cpu, pod.Spec.Overhead[v1.ResourceMemory])
}
