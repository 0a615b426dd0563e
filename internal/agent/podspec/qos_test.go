package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func withResources(name string, r v1.ResourceRequirements) v1.Container {
	c := newContainer(name)
	c.Resources = r
	return c
}

// withInit puts init containers in front of pod's containers.
func withInit(pod *v1.Pod, init ...v1.Container) *v1.Pod {
	pod.Spec.InitContainers = init
	return pod
}

// withPodResources sets pod-level resources (spec.resources).
func withPodResources(pod *v1.Pod, r v1.ResourceRequirements) *v1.Pod {
	pod.Spec.Resources = &r
	return pod
}

type qosCase struct {
	name string
	pod  *v1.Pod
	want v1.PodQOSClass
}

func checkQOS(t *testing.T, cases []qosCase) {
	t.Helper()
	for _, tc := range cases {
		if got := QOSClass(tc.pod); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Rule 1: a container's class comes from its cpu and memory alone, a
// request not written taken from its limit.
func TestQOSRuleContainerClass(t *testing.T) {
	one := func(r v1.ResourceRequirements) *v1.Pod { return newPod(withResources("a", r)) }
	checkQOS(t, []qosCase{
		{"nothing set", newPod(newContainer("a")), v1.PodQOSBestEffort},
		{"zero requests only", one(resources("0", "0", "", "")), v1.PodQOSBestEffort},
		{"non-QoS resource ignored", one(v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}), v1.PodQOSBestEffort},
		{"equal requests and limits", one(resources("500m", "1Gi", "500m", "1Gi")), v1.PodQOSGuaranteed},
		{"limits only: requests default to them", one(resources("", "", "1", "1Gi")), v1.PodQOSGuaranteed},
		{"cpu request defaults to its limit", one(resources("", "1Gi", "1", "1Gi")), v1.PodQOSGuaranteed},
		{"a zero request is written, not defaulted", one(resources("0", "1Gi", "1", "1Gi")), v1.PodQOSBurstable},
		{"requests below limits", one(resources("100m", "1Gi", "500m", "1Gi")), v1.PodQOSBurstable},
		{"memory limit missing", one(resources("500m", "1Gi", "500m", "")), v1.PodQOSBurstable},
		{"cpu guaranteed, memory unset", one(resources("1", "", "1", "")), v1.PodQOSBurstable},
		{"requests only", one(resources("100m", "", "", "")), v1.PodQOSBurstable},
	})
}

// Rule 2: the pod is Guaranteed or BestEffort when every container, init
// containers and sidecars included, is; else Burstable.
func TestQOSRulePodFromContainers(t *testing.T) {
	full := resources("500m", "1Gi", "500m", "1Gi")
	sidecar := withResources("side", resources("100m", "", "", ""))
	sidecar.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
	checkQOS(t, []qosCase{
		{"no containers", newPod(), v1.PodQOSBestEffort},
		{"two best effort", newPod(newContainer("a"), newContainer("b")), v1.PodQOSBestEffort},
		{"two guaranteed", newPod(withResources("a", full), withResources("b", resources("1", "2Gi", "1", "2Gi"))), v1.PodQOSGuaranteed},
		{"one guaranteed one best effort", newPod(withResources("a", full), newContainer("b")), v1.PodQOSBurstable},
		{"one burstable", newPod(withResources("a", full), withResources("b", resources("100m", "", "1", ""))), v1.PodQOSBurstable},
		{"init container best effort", withInit(newPod(withResources("a", full)), newContainer("init")), v1.PodQOSBurstable},
		{"only an init container requests", withInit(newPod(newContainer("a")), withResources("init", resources("100m", "", "", ""))), v1.PodQOSBurstable},
		{"a sidecar requests", withInit(newPod(newContainer("a")), sidecar), v1.PodQOSBurstable},
		{"init and regular guaranteed", withInit(newPod(withResources("a", full)), withResources("init", full)), v1.PodQOSGuaranteed},
	})
}

// Rule 3: pod-level resources naming cpu, memory or a hugepages size decide
// alone, the pod classed as one container would be; other pod-level
// resources leave it to the containers.
func TestQOSRulePodLevelDecides(t *testing.T) {
	full := resources("500m", "1Gi", "500m", "1Gi")
	hugepages := v1.ResourceRequirements{Limits: v1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")}}
	storage := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}
	checkQOS(t, []qosCase{
		{"pod-level guaranteed, containers empty", withPodResources(newPod(newContainer("a")), full), v1.PodQOSGuaranteed},
		{"pod-level limits only", withPodResources(newPod(newContainer("a")), resources("", "", "1", "1Gi")), v1.PodQOSGuaranteed},
		{"pod-level burstable over guaranteed containers", withPodResources(newPod(withResources("a", full)),
			resources("500m", "512Mi", "1", "1Gi")), v1.PodQOSBurstable},
		{"pod-level guaranteed over burstable containers", withPodResources(newPod(withResources("a", resources("100m", "", "", ""))),
			full), v1.PodQOSGuaranteed},
		{"pod-level zero requests", withPodResources(newPod(newContainer("a")), resources("0", "0", "", "")), v1.PodQOSBestEffort},
		{"pod-level zero cpu request under limited containers", withPodResources(newPod(withResources("a", full)),
			resources("0", "", "", "")), v1.PodQOSBurstable},
		{"pod-level hugepages only", withPodResources(newPod(newContainer("a")), hugepages), v1.PodQOSBestEffort},
		{"pod-level hugepages only, guaranteed containers: their defaults", withPodResources(newPod(withResources("a", full)), hugepages),
			v1.PodQOSGuaranteed},
		{"empty pod-level resources defer to containers", withPodResources(newPod(withResources("a", full)), v1.ResourceRequirements{}), v1.PodQOSGuaranteed},
		{"pod-level ephemeral storage defers to containers", withPodResources(newPod(withResources("a", full)), storage), v1.PodQOSGuaranteed},
	})
}

// Rule 4: the API server's pod-level defaults come first: a request not
// written is the containers' summed request, else the pod-level limit; a
// limit not written, where every container limits it, the larger of the
// pod-level request and the containers' summed limits.
func TestQOSRulePodLevelDefaults(t *testing.T) {
	full := resources("500m", "1Gi", "500m", "1Gi")
	checkQOS(t, []qosCase{
		{"requests from the containers, not from the pod-level limits", withPodResources(
			newPod(withResources("a", resources("100m", "100Mi", "", ""))), resources("", "", "1", "1Gi")), v1.PodQOSBurstable},
		{"requests from the pod-level limits when no container requests", withPodResources(
			newPod(newContainer("a")), resources("", "", "1", "1Gi")), v1.PodQOSGuaranteed},
		{"limits from the containers when every one limits", withPodResources(
			newPod(withResources("a", full), withResources("b", full)), resources("1", "2Gi", "", "")), v1.PodQOSGuaranteed},
		{"pod-level memory request only, guaranteed containers", withPodResources(
			newPod(withResources("a", full)), resources("", "1Gi", "", "")), v1.PodQOSGuaranteed},
		{"limits from the pod-level request when it is larger", withPodResources(
			newPod(withResources("a", full)), resources("1", "2Gi", "", "")), v1.PodQOSGuaranteed},
		{"no limit default when a container has none", withPodResources(
			newPod(withResources("a", full), newContainer("b")), resources("1", "2Gi", "", "")), v1.PodQOSBurstable},
		{"container limits default their requests first", withPodResources(
			newPod(withResources("a", resources("", "", "1", "1Gi"))), resources("", "", "2", "2Gi")), v1.PodQOSBurstable},
	})
}

// The disagreement: status, cgroup parent (both drivers) and
// oom_score_adj all follow the one class, pod-level resources included.
func TestQOSPlacementFollowsTheClass(t *testing.T) {
	guaranteed := withPodResources(newPod(newContainer("a")), resources("1", "1Gi", "1", "1Gi"))
	bestEffort := withPodResources(newPod(newContainer("a")), resources("0", "0", "", ""))
	if QOSClass(guaranteed) != v1.PodQOSGuaranteed || PodCgroupParent("", guaranteed) != "/berth/kubepods/poduid-1" ||
		PodSlice(guaranteed) != "berth-kubepods-poduid_1.slice" || OOMScoreAdj(guaranteed, &guaranteed.Spec.Containers[0], 8<<30) != -997 {
		t.Errorf("pod-level guaranteed: %s %s %s %d", QOSClass(guaranteed), PodCgroupParent("", guaranteed), PodSlice(guaranteed),
			OOMScoreAdj(guaranteed, &guaranteed.Spec.Containers[0], 8<<30))
	}
	if QOSClass(bestEffort) != v1.PodQOSBestEffort || PodCgroupParent("", bestEffort) != "/berth/kubepods/besteffort/poduid-1" ||
		OOMScoreAdj(bestEffort, &bestEffort.Spec.Containers[0], 8<<30) != 1000 {
		t.Errorf("pod-level best effort: %s %s %d", QOSClass(bestEffort), PodCgroupParent("", bestEffort),
			OOMScoreAdj(bestEffort, &bestEffort.Spec.Containers[0], 8<<30))
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const nodeMem = 10 << 30
	guaranteed := newPod(withResources("a", resources("1", "1Gi", "1", "1Gi")))
	bestEffort := newPod(newContainer("a"))
	burst := func(mem string) *v1.Pod { return newPod(withResources("a", resources("", mem, "", ""))) }
	critical := newPod(newContainer("a"))
	critical.Spec.PriorityClassName = "system-node-critical"
	cases := []struct {
		name    string
		pod     *v1.Pod
		nodeMem int64
		want    int64
	}{
		{"guaranteed", guaranteed, nodeMem, -997},
		{"best effort", bestEffort, nodeMem, 1000},
		{"node critical", critical, nodeMem, -997},
		{"burstable 1Gi of 10Gi", burst("1Gi"), nodeMem, 900},
		{"burstable tiny request", burst("1"), nodeMem, 999},
		{"burstable whole node", burst("10Gi"), nodeMem, 3},
		{"burstable beyond node", burst("20Gi"), nodeMem, 3},
		{"burstable unknown node memory", burst("1Gi"), 0, 999},
	}
	for _, tc := range cases {
		if got := OOMScoreAdj(tc.pod, &tc.pod.Spec.Containers[0], tc.nodeMem); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestOOMScoreAdjSidecar(t *testing.T) {
	const nodeMem = 10 << 30
	sidecar := withResources("side", resources("", "2Gi", "", ""))
	sidecar.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
	pod := newPod(withResources("a", resources("", "1Gi", "", "")))
	pod.Spec.InitContainers = []v1.Container{sidecar}
	// The regular container requests less: the sidecar is scored by 1Gi and
	// gets one more point, so it dies first.
	if got, want := OOMScoreAdj(pod, &pod.Spec.InitContainers[0], nodeMem), int64(901); got != want {
		t.Errorf("sidecar with larger request: %d, want %d", got, want)
	}
	if got, want := OOMScoreAdj(pod, &pod.Spec.Containers[0], nodeMem), int64(900); got != want {
		t.Errorf("regular container: %d, want %d", got, want)
	}
	pod.Spec.InitContainers[0].Resources = resources("", "512Mi", "", "")
	if got, want := OOMScoreAdj(pod, &pod.Spec.InitContainers[0], nodeMem), int64(951); got != want {
		t.Errorf("sidecar with smaller request: %d, want %d", got, want)
	}
	// No request of its own: scored by the smaller of the 200 MiB default and
	// the regular 1Gi, without the extra point.
	pod.Spec.InitContainers[0].Resources = v1.ResourceRequirements{}
	if got, want := OOMScoreAdj(pod, &pod.Spec.InitContainers[0], nodeMem), int64(1000-1000*200/10240); got != want {
		t.Errorf("sidecar without request: %d, want %d", got, want)
	}
}

func TestCPUSharesAndQuota(t *testing.T) {
	shares := []struct{ milli, want int64 }{{0, 2}, {1, 2}, {2, 2}, {100, 102}, {250, 256}, {1000, 1024}, {1 << 40, 262144}}
	for _, tc := range shares {
		if got := CPUShares(tc.milli); got != tc.want {
			t.Errorf("CPUShares(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
	quota := []struct{ milli, want int64 }{{0, 0}, {1, 1000}, {10, 1000}, {100, 10000}, {1500, 150000}}
	for _, tc := range quota {
		if got := CPUQuota(tc.milli, 100000); got != tc.want {
			t.Errorf("CPUQuota(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

func TestContainerResources(t *testing.T) {
	cases := []struct {
		name                 string
		r                    v1.ResourceRequirements
		shares, quota, bytes int64
	}{
		{"none", v1.ResourceRequirements{}, 2, 0, 0},
		{"request only", resources("500m", "", "", ""), 512, 0, 0},
		{"limit only: shares from limit", resources("", "", "2", "256Mi"), 2048, 200000, 256 << 20},
		{"both", resources("250m", "64Mi", "1", "128Mi"), 256, 100000, 128 << 20},
	}
	for _, tc := range cases {
		pod := newPod(withResources("a", tc.r))
		r := containerResources(pod, &pod.Spec.Containers[0], 8<<30)
		if r.CpuShares != tc.shares || r.CpuQuota != tc.quota || r.MemoryLimitInBytes != tc.bytes || r.CpuPeriod != 100000 {
			t.Errorf("%s: shares %d quota %d period %d mem %d, want %d %d 100000 %d",
				tc.name, r.CpuShares, r.CpuQuota, r.CpuPeriod, r.MemoryLimitInBytes, tc.shares, tc.quota, tc.bytes)
		}
	}
}

func TestPodRequestsAndLimits(t *testing.T) {
	pod := newPod(
		withResources("a", resources("100m", "100Mi", "200m", "")),
		withResources("b", resources("200m", "100Mi", "300m", "")),
	)
	side := withResources("side", resources("50m", "", "", ""))
	side.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
	pod.Spec.InitContainers = []v1.Container{
		side,
		withResources("big-init", resources("1", "50Mi", "", "")),
	}
	req := PodRequests(pod)
	// long-running: 100m+200m+50m = 350m; init peak: 1 + 50m sidecar = 1050m.
	if got := req[v1.ResourceCPU]; got.MilliValue() != 1050 {
		t.Errorf("cpu request %s, want 1050m", &got)
	}
	if got := req[v1.ResourceMemory]; got.Value() != 200<<20 {
		t.Errorf("memory request %s, want 200Mi", &got)
	}
	lim := PodLimits(pod)
	if got := lim[v1.ResourceCPU]; got.MilliValue() != 500 {
		t.Errorf("cpu limit %s, want 500m", &got)
	}
	r := sandboxResources(pod)
	if r.CpuShares != CPUShares(1050) || r.CpuQuota != 50000 {
		t.Errorf("sandbox resources %v", r)
	}
}
