package podcgroup

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

func TestParentSlice(t *testing.T) {
	for in, want := range map[string]string{
		"berth-kubepods-pod1.slice":           "berth-kubepods.slice",
		"berth-kubepods-burstable-pod1.slice": "berth-kubepods-burstable.slice",
		"berth.slice":                         "",
		"berth-kubepods-pod1.scope":           "",
		"-pod1.slice":                         "",
	} {
		got, ok := parentSlice(in)
		if got != want || ok != (want != "") {
			t.Errorf("parentSlice(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestQuotaPerSecond(t *testing.T) {
	for _, tc := range []struct {
		quota  int64
		period uint64
		want   uint64
	}{{50000, 100000, 500000}, {1000, 100000, 10000}, {1500, 100000, 20000}, {200000, 100000, 2000000}} {
		if got := quotaPerSecond(tc.quota, tc.period); got != tc.want {
			t.Errorf("quotaPerSecond(%d, %d) = %d, want %d", tc.quota, tc.period, got, tc.want)
		}
	}
}

// The slice's properties follow the hierarchy: v2 names (CPUWeight, from
// the shares by kubelet's linear mapping: 512 → 20,
// MemoryMax) on the unified one, v1 names (CPUShares, MemoryLimit) on the
// legacy one; no quota and no memory limit when the pod has none.
func TestSliceProperties(t *testing.T) {
	limited := podspec.PodCgroupConfig{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 << 20}
	for _, tc := range []struct {
		name    string
		cfg     podspec.PodCgroupConfig
		unified bool
		want    map[string]any
	}{
		{"v2", limited, true, map[string]any{"CPUWeight": uint64(20), "CPUQuotaPerSecUSec": uint64(500000), "MemoryMax": uint64(64 << 20)}},
		{"v1", limited, false, map[string]any{"CPUShares": uint64(512), "CPUQuotaPerSecUSec": uint64(500000), "MemoryLimit": uint64(64 << 20)}},
		{"no limits", podspec.PodCgroupConfig{CPUShares: 2}, true, map[string]any{"CPUWeight": uint64(1)}},
	} {
		got := map[string]any{}
		for _, p := range sliceProperties(tc.cfg, tc.unified) {
			if p.Name != "MemoryAccounting" && p.Name != "CPUAccounting" && p.Name != "TasksAccounting" {
				got[p.Name] = p.Value.Value()
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: properties %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v (%T), want %v", tc.name, k, got[k], got[k], v)
			}
		}
	}
}

// Under cgroupfs the pod's cgroup is its kubelet-style path, with the
// pod's limits and no device rules of its own.
func TestCgroupfsDescription(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}}}}}
	cg := (&Manager{}).cgroup(pod)
	if cg.Path != "/berth/kubepods/podu1" {
		t.Errorf("path %q, want /berth/kubepods/podu1", cg.Path)
	}
	r := cg.Resources
	if !r.SkipDevices || r.CpuShares != 512 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.Memory != 64<<20 {
		t.Errorf("resources %+v", *r)
	}
}
