package podspec

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// The pod cgroup gets kubelet's ResourceConfigForPod (on pods as the API
// server defaults them: requests from limits): weight from the
// requests, quota and memory only where every container (or the pod level)
// declares the limit, BestEffort the minimum weight alone; overhead and
// init containers count; hugepages by kernel page size.
func TestPodCgroup(t *testing.T) {
	withOverhead := newPod(withResources("a", resources("500m", "64Mi", "500m", "64Mi")))
	withOverhead.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	huge := withResources("h", resources("1", "64Mi", "1", "64Mi"))
	huge.Resources.Limits[v1.ResourceName("hugepages-2Mi")] = resource.MustParse("4Mi")
	huge.Resources.Requests[v1.ResourceName("hugepages-2Mi")] = resource.MustParse("4Mi")
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want PodCgroupConfig
	}{
		{"guaranteed", newPod(withResources("a", resources("500m", "64Mi", "500m", "64Mi"))),
			PodCgroupConfig{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 << 20}},
		{"guaranteed, two containers", newPod(withResources("a", resources("250m", "32Mi", "250m", "32Mi")), withResources("b", resources("250m", "32Mi", "250m", "32Mi"))),
			PodCgroupConfig{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 << 20}},
		{"burstable, every limit declared", newPod(withResources("a", resources("100m", "16Mi", "500m", "64Mi"))),
			PodCgroupConfig{CPUShares: 102, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 << 20}},
		{"burstable, one container without limits", newPod(withResources("a", resources("100m", "16Mi", "500m", "64Mi")), withResources("b", resources("100m", "", "", ""))),
			PodCgroupConfig{CPUShares: 204}},
		{"besteffort", newPod(newContainer("a")), PodCgroupConfig{CPUShares: 2}},
		{"init container peak", withInit(newPod(withResources("a", resources("500m", "64Mi", "500m", "64Mi"))), withResources("i", resources("1", "128Mi", "1", "128Mi"))),
			PodCgroupConfig{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, Memory: 128 << 20}},
		{"overhead counts", withOverhead,
			PodCgroupConfig{CPUShares: 614, CPUQuota: 60000, CPUPeriod: 100000, Memory: 80 << 20}},
		{"pod-level limits declare them", withPodResources(newPod(withResources("a", resources("100m", "16Mi", "", ""))), resources("", "", "1", "128Mi")),
			PodCgroupConfig{CPUShares: 102, CPUQuota: 100000, CPUPeriod: 100000, Memory: 128 << 20}},
		{"huge pages", newPod(huge),
			PodCgroupConfig{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, Memory: 64 << 20, HugePages: map[string]int64{"2MB": 4 << 20}}},
	} {
		got := PodCgroup(tc.pod)
		if len(got.HugePages) == 0 {
			got.HugePages = nil
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestKernelPageSize(t *testing.T) {
	for in, want := range map[string]string{"2Mi": "2MB", "1Gi": "1GB", "64Ki": "64KB", "2M": "", "Mi": "", "x2Mi": ""} {
		if got := kernelPageSize(in); got != want {
			t.Errorf("kernelPageSize(%q) = %q, want %q", in, got, want)
		}
	}
}

// kubelet's linear shares → cpu.weight mapping (cgroup_manager_linux.go),
// not the cgroups library's curve: pod cgroups are siblings, and CPU must
// split in proportion to their requests.
func TestCPUWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{0: 1, 2: 1, 102: 4, 512: 20, 1024: 39, 262144: 10000, 300000: 10000} {
		if got := CPUWeight(shares); got != want {
			t.Errorf("CPUWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestValidUID(t *testing.T) {
	for uid, want := range map[string]bool{
		"0f8e6a4c-1b2d-4e5f-8a9b-0c1d2e3f4a5b": true, "4d6b9085a2f0b43003e83adb86b2a87f": true, "a_b": true,
		"": false, "..": false, "a/b": false, "../../x": false, "a b": false, "a:b": false,
	} {
		if got := ValidUID(types.UID(uid)); got != want {
			t.Errorf("ValidUID(%q) = %v, want %v", uid, got, want)
		}
	}
}
