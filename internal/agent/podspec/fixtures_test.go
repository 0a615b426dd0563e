package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newPod(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "x"},
		},
		Spec: v1.PodSpec{Containers: containers, NodeName: "node-a", ServiceAccountName: "sa"},
	}
}

func newContainer(name string) v1.Container {
	return v1.Container{Name: name, Image: "docker.io/library/busybox:1.36", TerminationMessagePath: "/dev/termination-log"}
}

func resources(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{}
	set := func(list *v1.ResourceList, name v1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *list == nil {
			*list = v1.ResourceList{}
		}
		(*list)[name] = resource.MustParse(v)
	}
	set(&r.Requests, v1.ResourceCPU, reqCPU)
	set(&r.Requests, v1.ResourceMemory, reqMem)
	set(&r.Limits, v1.ResourceCPU, limCPU)
	set(&r.Limits, v1.ResourceMemory, limMem)
	return r
}

func ptr[T any](v T) *T { return &v }
