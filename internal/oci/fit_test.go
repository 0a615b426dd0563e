package oci

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

type hostWith map[string]bool

func (h hostWith) Has(name string) bool { return h[name] }

// kubeletResources is what kubelet sends on cgroup v1 for a Burstable
// container: every page size with limit 0 and a pids limit.
func kubeletResources() *specs.LinuxResources {
	return &specs.LinuxResources{
		CPU:            &specs.LinuxCPU{Shares: ptr(uint64(102)), Quota: ptr(int64(50000)), Period: ptr(uint64(100000)), Cpus: "0-1"},
		Memory:         &specs.LinuxMemory{Limit: ptr(int64(64 << 20)), Swap: ptr(int64(64 << 20))},
		Pids:           &specs.LinuxPids{Limit: ptr(int64(1024))},
		HugepageLimits: []specs.LinuxHugepageLimit{{Pagesize: "2MB"}, {Pagesize: "1GB"}},
		BlockIO:        &specs.LinuxBlockIO{Weight: ptr(uint16(500))},
		Unified:        map[string]string{"hugetlb.2MB.max": "0", "memory.high": "1000000", "cgroup.freeze": "0"},
	}
}

func TestFitResources(t *testing.T) {
	all := hostWith{"cpu": true, "cpuset": true, "memory": true, "memsw": true, "hugetlb": true, "pids": true, "blkio": true, "rdma": true, "io": true}
	without := func(names ...string) hostWith {
		h := hostWith{}
		for k, v := range all {
			h[k] = v && !slices.Contains(names, k)
		}
		return h
	}
	for _, tc := range []struct {
		name  string
		host  Controllers
		want  []string
		check func(t *testing.T, r *specs.LinuxResources)
	}{
		{"nil host keeps all", nil, nil, func(t *testing.T, r *specs.LinuxResources) {
			if len(r.HugepageLimits) != 2 || r.Pids == nil {
				t.Error("settings dropped")
			}
		}},
		{"every controller", all, nil, nil},
		{"no hugetlb (this host, kubelet's hugepage limits)", without("hugetlb"),
			[]string{"hugepage_limits (hugetlb)", "unified[hugetlb.2MB.max] (hugetlb)"},
			func(t *testing.T, r *specs.LinuxResources) {
				if r.HugepageLimits != nil || r.Unified["hugetlb.2MB.max"] != "" || r.Unified["memory.high"] == "" || r.Unified["cgroup.freeze"] == "" {
					t.Errorf("hugepages %v unified %v", r.HugepageLimits, r.Unified)
				}
			}},
		{"no swap accounting", without("memsw"), []string{"memory_swap (memsw)"}, func(t *testing.T, r *specs.LinuxResources) {
			if r.Memory.Swap != nil || r.Memory.Limit == nil {
				t.Errorf("memory %+v", r.Memory)
			}
		}},
		{"no pids, blkio, cpuset", without("pids", "blkio", "io", "cpuset"),
			[]string{"pids (pids)", "block_io (blkio)", "cpuset (cpuset)"},
			func(t *testing.T, r *specs.LinuxResources) {
				if r.Pids != nil || r.BlockIO != nil || r.CPU.Cpus != "" || r.CPU.Shares == nil {
					t.Errorf("pids %v blockio %v cpu %+v", r.Pids, r.BlockIO, r.CPU)
				}
			}},
		{"no cpu or cpuset: the CPU section goes", without("cpu", "cpuset"),
			[]string{"cpuset (cpuset)", "cpu (cpu)"},
			func(t *testing.T, r *specs.LinuxResources) {
				if r.CPU != nil {
					t.Errorf("cpu %+v", r.CPU)
				}
			}},
		{"no memory", without("memory"), []string{"memory (memory)", "unified[memory.high] (memory)"},
			func(t *testing.T, r *specs.LinuxResources) {
				if r.Memory != nil {
					t.Errorf("memory %+v", r.Memory)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := kubeletResources()
			got := FitResources(r, tc.host)
			if !slices.Equal(got, tc.want) {
				t.Errorf("dropped %q, want %q", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
	if got := FitResources(nil, hostWith{}); got != nil {
		t.Errorf("nil resources: %v", got)
	}
}
