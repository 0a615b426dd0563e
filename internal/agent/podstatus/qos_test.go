package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resources(requests, limits map[v1.ResourceName]string) v1.ResourceRequirements {
	parse := func(m map[v1.ResourceName]string) v1.ResourceList {
		if m == nil {
			return nil
		}
		out := v1.ResourceList{}
		for k, v := range m {
			out[k] = resource.MustParse(v)
		}
		return out
	}
	return v1.ResourceRequirements{Requests: parse(requests), Limits: parse(limits)}
}

func withResources(c v1.Container, r v1.ResourceRequirements) v1.Container {
	c.Resources = r
	return c
}

func TestQOSClass(t *testing.T) {
	cpuMem := map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "128Mi"}
	guaranteed := resources(cpuMem, cpuMem)
	cases := []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"nothing set", newPod("", nil, ctr("a")), v1.PodQOSBestEffort},
		{"only other resources", newPod("", nil, withResources(ctr("a"),
			resources(map[v1.ResourceName]string{v1.ResourceEphemeralStorage: "1Gi"}, nil))), v1.PodQOSBestEffort},
		{"zero requests", newPod("", nil, withResources(ctr("a"),
			resources(map[v1.ResourceName]string{v1.ResourceCPU: "0"}, nil))), v1.PodQOSBestEffort},
		{"requests only", newPod("", nil, withResources(ctr("a"),
			resources(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}, nil))), v1.PodQOSBurstable},
		{"equal requests and limits", newPod("", nil, withResources(ctr("a"), guaranteed)), v1.PodQOSGuaranteed},
		{"limits without requests (not defaulted yet)", newPod("", nil, withResources(ctr("a"),
			resources(nil, cpuMem))), v1.PodQOSBurstable},
		{"request below limit", newPod("", nil, withResources(ctr("a"), resources(
			map[v1.ResourceName]string{v1.ResourceCPU: "250m", v1.ResourceMemory: "128Mi"}, cpuMem))), v1.PodQOSBurstable},
		{"memory limit missing", newPod("", nil, withResources(ctr("a"), resources(
			map[v1.ResourceName]string{v1.ResourceCPU: "500m"}, map[v1.ResourceName]string{v1.ResourceCPU: "500m"}))), v1.PodQOSBurstable},
		{"one container unbounded", newPod("", nil, withResources(ctr("a"), guaranteed), ctr("b")), v1.PodQOSBurstable},
		{"init container counts", newPod("", []v1.Container{ctr("init")}, withResources(ctr("a"), guaranteed)), v1.PodQOSBurstable},
		{"every container guaranteed", newPod("", []v1.Container{withResources(ctr("init"), guaranteed)},
			withResources(ctr("a"), guaranteed), withResources(ctr("b"), guaranteed)), v1.PodQOSGuaranteed},
		{"pod-level resources decide", func() *v1.Pod {
			p := newPod("", nil, ctr("a"))
			r := guaranteed
			p.Spec.Resources = &r
			return p
		}(), v1.PodQOSGuaranteed},
		{"pod-level requests only", func() *v1.Pod {
			p := newPod("", nil, withResources(ctr("a"), guaranteed))
			r := resources(map[v1.ResourceName]string{v1.ResourceMemory: "1Gi"}, nil)
			p.Spec.Resources = &r
			return p
		}(), v1.PodQOSBurstable},
	}
	for _, tc := range cases {
		if got := QOSClass(tc.pod); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
