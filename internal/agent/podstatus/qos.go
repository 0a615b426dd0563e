package podstatus

import (
	v1 "k8s.io/api/core/v1"
)

// QOSClass computes the pod's quality-of-service class from CPU and memory requests
// and limits (other resources do not count; zero quantities count as unset):
//
//   - BestEffort: no container (init or regular) requests or limits CPU or memory;
//   - Guaranteed: every container limits both CPU and memory, and the summed requests
//     equal the summed limits for each of them;
//   - Burstable: anything else.
//
// When pod-level resources (spec.resources) set CPU or memory, they alone decide, with
// the same rules applied to the pod as a whole.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if r := pod.Spec.Resources; r != nil {
		requests, limits := qosResources(r.Requests), qosResources(r.Limits)
		if len(requests) > 0 || len(limits) > 0 {
			return classify(requests, limits, len(limits) == 2)
		}
	}
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	everyLimitSet := true
	containers := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range containers {
		addTo(requests, qosResources(c.Resources.Requests))
		own := qosResources(c.Resources.Limits)
		addTo(limits, own)
		if len(own) != 2 {
			everyLimitSet = false
		}
	}
	return classify(requests, limits, everyLimitSet)
}

// classify applies the rules once requests and limits are gathered; limitsComplete says
// whether CPU and memory limits are set everywhere they must be.
func classify(requests, limits v1.ResourceList, limitsComplete bool) v1.PodQOSClass {
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

// qosResources keeps the positive CPU and memory quantities of list.
func qosResources(list v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if q, ok := list[name]; ok && q.Sign() > 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

func addTo(sum, list v1.ResourceList) {
	for name, q := range list {
		if have, ok := sum[name]; ok {
			have.Add(q)
			sum[name] = have
		} else {
			sum[name] = q.DeepCopy()
		}
	}
}
