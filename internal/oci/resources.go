package oci

import (
	"fmt"
	"strconv"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerResources converts the CRI resources (cgroup v1 semantics). An
// absent or zero field sets nothing. Swap defaults to the memory limit (no
// swap), which is what kubelet expects on cgroup v1.
func containerResources(r *runtimeapi.LinuxContainerResources) (*specs.LinuxResources, error) {
	res := &specs.LinuxResources{}
	if r == nil {
		return res, nil
	}
	cpu, err := cpuResources(r)
	if err != nil {
		return nil, err
	}
	res.CPU = cpu
	memory, err := memoryResources(r)
	if err != nil {
		return nil, err
	}
	res.Memory = memory
	for i, h := range r.GetHugepageLimits() {
		if h.GetPageSize() == "" {
			return nil, fmt.Errorf("resources: hugepage_limits[%d]: page size empty: %w", i, errdefs.ErrInvalidArgument)
		}
		res.HugepageLimits = append(res.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	if len(r.GetUnified()) > 0 {
		res.Unified = make(map[string]string, len(r.GetUnified()))
		for k, v := range r.GetUnified() {
			res.Unified[k] = v
		}
	}
	return res, nil
}

func cpuResources(r *runtimeapi.LinuxContainerResources) (*specs.LinuxCPU, error) {
	if r.GetCpuShares() < 0 || r.GetCpuPeriod() < 0 {
		return nil, fmt.Errorf("resources: cpu shares %d / period %d: negative: %w",
			r.GetCpuShares(), r.GetCpuPeriod(), errdefs.ErrInvalidArgument)
	}
	cpu := &specs.LinuxCPU{Cpus: r.GetCpusetCpus(), Mems: r.GetCpusetMems()}
	set := cpu.Cpus != "" || cpu.Mems != ""
	if v := r.GetCpuShares(); v > 0 {
		shares := uint64(v)
		cpu.Shares, set = &shares, true
	}
	if v := r.GetCpuQuota(); v != 0 {
		quota := v
		cpu.Quota, set = &quota, true
	}
	if v := r.GetCpuPeriod(); v > 0 {
		period := uint64(v)
		cpu.Period, set = &period, true
	}
	if !set {
		return nil, nil
	}
	return cpu, nil
}

func memoryResources(r *runtimeapi.LinuxContainerResources) (*specs.LinuxMemory, error) {
	limit, swap := r.GetMemoryLimitInBytes(), r.GetMemorySwapLimitInBytes()
	switch {
	case limit < 0:
		return nil, fmt.Errorf("resources: memory limit %d: negative: %w", limit, errdefs.ErrInvalidArgument)
	case limit == 0 && swap == 0:
		return nil, nil
	case limit == 0:
		return nil, fmt.Errorf("resources: memory swap limit %d without a memory limit: %w", swap, errdefs.ErrInvalidArgument)
	case swap == 0:
		swap = limit
	case swap > 0 && swap < limit:
		return nil, fmt.Errorf("resources: memory swap limit %d below memory limit %d: %w", swap, limit, errdefs.ErrInvalidArgument)
	}
	return &specs.LinuxMemory{Limit: &limit, Swap: &swap}, nil
}

// ClampOOMScoreAdj raises requested to min: no process the daemon starts can
// go below the daemon's own score (that needs CAP_SYS_RESOURCE). clamped
// reports whether the value changed.
func ClampOOMScoreAdj(requested, min int) (adj int, clamped bool) {
	if requested < min {
		return min, true
	}
	return requested, false
}

// applyOOMScoreAdj sets the process oom_score_adj from the resources, if any,
// and records a clamped request in an annotation.
func applyOOMScoreAdj(spec *specs.Spec, r *runtimeapi.LinuxContainerResources, min int) error {
	if r == nil {
		return nil
	}
	requested := r.GetOomScoreAdj()
	if requested < -1000 || requested > 1000 {
		return fmt.Errorf("resources: oom_score_adj %d: outside [-1000, 1000]: %w", requested, errdefs.ErrInvalidArgument)
	}
	adj, clamped := ClampOOMScoreAdj(int(requested), min)
	spec.Process.OOMScoreAdj = &adj
	if clamped {
		spec.Annotations[AnnotationRequestedOOMScoreAdj] = strconv.FormatInt(requested, 10)
	}
	return nil
}

// UpdateResources converts the resources of an UpdateContainerResources
// request to what `runc update` applies (CPU, memory, pids are kept as they
// are; hugepages and unified entries too). It validates like CreateContainer.
func UpdateResources(r *runtimeapi.LinuxContainerResources) (*specs.LinuxResources, error) {
	if r == nil {
		return nil, fmt.Errorf("resources: linux: missing: %w", errdefs.ErrInvalidArgument)
	}
	return containerResources(r)
}

// MergeResources applies upd (UpdateResources' result) to the resources of
// a spec that runc has not run yet, as `runc update` would to a running
// container: what upd sets replaces dst's, the rest (device rules among
// it) stays.
func MergeResources(dst, upd *specs.LinuxResources) {
	if upd.CPU != nil {
		dst.CPU = upd.CPU
	}
	if upd.Memory != nil {
		dst.Memory = upd.Memory
	}
	if upd.Pids != nil {
		dst.Pids = upd.Pids
	}
	if len(upd.HugepageLimits) > 0 {
		dst.HugepageLimits = upd.HugepageLimits
	}
	for k, v := range upd.Unified {
		if dst.Unified == nil {
			dst.Unified = map[string]string{}
		}
		dst.Unified[k] = v
	}
}
