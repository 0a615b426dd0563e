package podcgroup

import (
	"context"
	"fmt"
	"sync"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/hostcgroup"
)

// Ensure creates the pod's cgroup, or finds it, and sizes it as
// podspec.PodCgroup says, before its sandbox is made: the runtime then
// puts the sandbox's and the containers' cgroups below a parent that
// already holds the pod's limits, as kubelet's EnsureExists does. Under
// systemd the pod's slice is a unit systemd sizes (ensureSlice); under
// cgroupfs the library writes the files.
func (m *Manager) Ensure(ctx context.Context, pod *v1.Pod) error {
	if m.Systemd {
		slice := podspec.PodSlice(pod)
		if err := ensureSlice(ctx, slice, podspec.PodCgroup(pod)); err != nil {
			return fmt.Errorf("pod cgroup %s: %w", slice, err)
		}
		return nil
	}
	cg := m.cgroup(pod)
	mgr, err := manager.New(cg)
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", cg.Path, err)
	}
	if err := mgr.Apply(-1); err != nil {
		return fmt.Errorf("pod cgroup %s: create: %w", cg.Path, err)
	}
	if err := mgr.Set(cg.Resources); err != nil {
		return fmt.Errorf("pod cgroup %s: set its limits: %w", cg.Path, err)
	}
	return nil
}

// cgroup is the library's description of the pod's cgroupfs cgroup.
func (m *Manager) cgroup(pod *v1.Pod) *cgroups.Cgroup {
	cfg := podspec.PodCgroup(pod)
	res := &cgroups.Resources{
		SkipDevices: true, // the containers' device rules are the runtime's
		CpuShares:   cfg.CPUShares,
		CpuQuota:    cfg.CPUQuota,
		CpuPeriod:   cfg.CPUPeriod,
		Memory:      cfg.Memory,
	}
	if hugetlbMounted() {
		// Every size the host has, 0 unless requested: a pod may use only
		// the huge pages it asked for.
		for _, size := range cgroups.HugePageSizes() {
			res.HugetlbLimit = append(res.HugetlbLimit, &cgroups.HugepageLimit{Pagesize: size, Limit: uint64(max(cfg.HugePages[size], 0))})
		}
	}
	return &cgroups.Cgroup{Path: podspec.PodCgroupParent("", pod), Resources: res}
}

// hugetlbMounted reports whether this host's cgroups have the hugetlb
// controller (kubelet sets huge page limits only then).
var hugetlbMounted = sync.OnceValue(func() bool {
	c, err := hostcgroup.Detect()
	return err == nil && c.Has("hugetlb")
})
