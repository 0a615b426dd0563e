package nodefit

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func requesting(cpu, memory string) v1.Container {
	c := v1.Container{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}
	if cpu != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(memory)
	}
	return c
}

func TestRequestsAsTheSchedulerCountsThem(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := requesting("100m", "10Mi")
	sidecar.RestartPolicy = &always
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{requesting("2", "1Mi"), sidecar},
		Containers:     []v1.Container{requesting("500m", "100Mi"), requesting("250m", "")},
		Overhead:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")},
	}}
	// CPU: max(init 2000, 500+250+100 sidecar) + 10 overhead; memory: max(1Mi, 100Mi+10Mi).
	want := Resources{Pods: 1, MilliCPU: 2010, Memory: 110 << 20}
	if got := Requests(pod); got != want {
		t.Errorf("Requests = %+v, want %+v", got, want)
	}
	if got := Requests(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "be"}}}}); got != (Resources{Pods: 1}) {
		t.Errorf("BestEffort Requests = %+v, want one pod and nothing else", got)
	}
}

func TestAdmitResourcesAsKubelet(t *testing.T) {
	alloc := Resources{Pods: 110, MilliCPU: 2000, Memory: 1 << 30, EphemeralStorage: 10 << 30}
	small := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{requesting("100m", "64Mi")}}}
	bigCPU := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{requesting("1500m", "")}}}
	bigMem := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{requesting("", "600Mi")}}}
	bestEffort := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "be"}}}}
	for _, tc := range []struct {
		name             string
		used             Resources
		pod              *v1.Pod
		reason, message  string
		schedulerReasons string
	}{
		{"room", Resources{Pods: 109, MilliCPU: 1900, Memory: 960 << 20}, small, "", "", ""},
		{"best effort on a full CPU", Resources{Pods: 3, MilliCPU: 2000, Memory: 1 << 30}, bestEffort, "", "", ""},
		{"pods", Resources{Pods: 110}, bestEffort, ReasonOutOfPods,
			"Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110", "1 Too many pods"},
		{"cpu", Resources{Pods: 2, MilliCPU: 1000}, bigCPU, ReasonOutOfCPU,
			"Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000", "1 Insufficient cpu"},
		{"memory", Resources{Pods: 2, Memory: 512 << 20}, bigMem, ReasonOutOfMemory,
			"Node didn't have enough resource: memory, requested: 629145600, used: 536870912, capacity: 1073741824", "1 Insufficient memory"},
		{"pods first, every reason to the scheduler", Resources{Pods: 110, MilliCPU: 2000, Memory: 1 << 30}, small, ReasonOutOfPods,
			"Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110", "1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods"},
	} {
		room := Room{Allocatable: alloc, Requested: tc.used}
		got := room.AdmitResources(tc.pod)
		if got.Admit != (tc.reason == "") || got.Reason != tc.reason || got.Message != tc.message {
			t.Errorf("%s: AdmitResources = %+v, want reason %q message %q", tc.name, got, tc.reason, tc.message)
		}
		sched := Schedule(tc.pod, Node("node1", nil, nil, time.Time{}), room)
		want := ""
		if tc.schedulerReasons != "" {
			want = "0/1 nodes are available: " + tc.schedulerReasons + ". no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
		}
		if sched.Admit != (want == "") || sched.Message != want || (want != "" && sched.Reason != ReasonUnschedulable) {
			t.Errorf("%s: Schedule = %+v, want message %q", tc.name, sched, want)
		}
	}
}

func TestScheduleChecksTaintsBeforeRoom(t *testing.T) {
	node := Node("node1", nil, []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}, time.Time{})
	full := Room{Allocatable: Resources{Pods: 1}, Requested: Resources{Pods: 1}}
	got := Schedule(&v1.Pod{}, node, full)
	if got.Admit || got.Message != "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling." {
		t.Errorf("tainted full node: %+v", got)
	}
}
