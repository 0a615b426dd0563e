package oci

import (
	"maps"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Controllers says which cgroup controllers the host can apply settings
// of (hostcgroup.Controllers; nil means all). Names are the kernel's v1
// names, "io" for v2's blkio and "memsw" for swap accounting.
type Controllers interface {
	Has(name string) bool
}

// FitResources leaves out of r the settings whose controller the host
// lacks — runc would fail the container on them, where containerd and
// CRI-O run it — and returns what it left out, e.g. "hugepage_limits
// (hugetlb)". A nil host keeps everything.
func FitResources(r *specs.LinuxResources, host Controllers) []string {
	if r == nil || host == nil {
		return nil
	}
	var dropped []string
	drop := func(setting, controller string, present bool, clear func()) {
		if present && !host.Has(controller) {
			clear()
			dropped = append(dropped, setting+" ("+controller+")")
		}
	}
	drop("hugepage_limits", "hugetlb", len(r.HugepageLimits) > 0, func() { r.HugepageLimits = nil })
	drop("pids", "pids", r.Pids != nil, func() { r.Pids = nil })
	drop("rdma", "rdma", len(r.Rdma) > 0, func() { r.Rdma = nil })
	drop("block_io", "blkio", r.BlockIO != nil, func() { r.BlockIO = nil })
	if c := r.CPU; c != nil {
		drop("cpuset", "cpuset", c.Cpus != "" || c.Mems != "", func() { c.Cpus, c.Mems = "", "" })
		drop("cpu", "cpu", c.Shares != nil || c.Quota != nil || c.Period != nil || c.RealtimeRuntime != nil || c.RealtimePeriod != nil,
			func() { c.Shares, c.Quota, c.Period, c.RealtimeRuntime, c.RealtimePeriod = nil, nil, nil, nil, nil })
		if *c == (specs.LinuxCPU{}) {
			r.CPU = nil
		}
	}
	if m := r.Memory; m != nil {
		drop("memory", "memory", true, func() { r.Memory = nil })
		if r.Memory != nil {
			drop("memory_swap", "memsw", m.Swap != nil, func() { m.Swap = nil })
		}
	}
	for _, key := range slices.Sorted(maps.Keys(r.Unified)) {
		controller, _, _ := strings.Cut(key, ".")
		if unifiedControllers[controller] {
			drop("unified["+key+"]", controller, true, func() { delete(r.Unified, key) })
		}
	}
	return dropped
}

// unifiedControllers are the v2 controllers whose files a unified entry
// may name; entries of other prefixes (cgroup.*) are left to runc.
var unifiedControllers = map[string]bool{
	"cpu": true, "cpuset": true, "memory": true, "hugetlb": true, "pids": true, "rdma": true, "io": true, "misc": true,
}
