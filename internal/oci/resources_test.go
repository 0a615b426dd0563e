package oci

import (
	"errors"
	"reflect"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func ptr[T any](v T) *T { return &v }

func TestContainerResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *runtimeapi.LinuxContainerResources
		want *specs.LinuxResources
	}{
		{"none", nil, &specs.LinuxResources{}},
		{"zero values set nothing", &runtimeapi.LinuxContainerResources{}, &specs.LinuxResources{}},
		{"cpu", &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, CpusetCpus: "0-1", CpusetMems: "0"},
			&specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: ptr[uint64](512), Quota: ptr[int64](50000), Period: ptr[uint64](100000), Cpus: "0-1", Mems: "0"}}},
		{"memory: swap equals limit", &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 1 << 20},
			&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](1 << 20), Swap: ptr[int64](1 << 20)}}},
		{"memory: explicit swap", &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 1 << 20, MemorySwapLimitInBytes: 2 << 20},
			&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](1 << 20), Swap: ptr[int64](2 << 20)}}},
		{"hugepages and unified", &runtimeapi.LinuxContainerResources{
			HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}}, Unified: map[string]string{"memory.high": "1"}},
			&specs.LinuxResources{HugepageLimits: []specs.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 4 << 20}},
				Unified: map[string]string{"memory.high": "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := containerResources(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("resources = %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, r := range []*runtimeapi.LinuxContainerResources{
		{MemoryLimitInBytes: 2 << 20, MemorySwapLimitInBytes: 1 << 20},
		{MemorySwapLimitInBytes: 1 << 20},
		{MemoryLimitInBytes: -1},
		{CpuShares: -2},
		{HugepageLimits: []*runtimeapi.HugepageLimit{{Limit: 1}}},
	} {
		if _, err := containerResources(r); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%v: err = %v, want InvalidArgument", r, err)
		}
	}
}

func TestClampOOMScoreAdj(t *testing.T) {
	for _, tc := range []struct {
		requested, min, want int
		clamped              bool
	}{
		{-997, -999, -997, false},
		{-1000, -999, -999, true},
		{1000, -999, 1000, false},
		{0, 0, 0, false},
		{-500, 0, 0, true},
		{-999, -999, -999, false},
	} {
		if got, clamped := ClampOOMScoreAdj(tc.requested, tc.min); got != tc.want || clamped != tc.clamped {
			t.Errorf("ClampOOMScoreAdj(%d, %d) = %d, %v; want %d, %v", tc.requested, tc.min, got, clamped, tc.want, tc.clamped)
		}
	}
}
