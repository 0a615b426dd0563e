package podcgroup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/hostcgroup"
)

// Manager makes and removes the pods' cgroups on this host.
type Manager struct {
	// Systemd lays pods out as systemd slices (podspec.PodSlice), as the
	// runtime's systemd cgroup driver expects; else as cgroupfs paths
	// (podspec.PodCgroupParent below the default base).
	Systemd bool
	// Log gets what is set aside: a limit the kernel refused.
	Log *slog.Logger

	// mu makes one cgroupfs pod cgroup at a time: the cgroups library keeps
	// package-level state unguarded (fs.BlkioGroup's weight file names),
	// as runc, its first user, is single-threaded.
	mu sync.Mutex
}

// Ensure makes the pod's cgroup, sized as podspec.PodCgroup says, before
// its sandbox is made, as kubelet's EnsureExists does: a cgroup that
// exists already is left as it is; one that cannot be made is an error
// (no sandbox then); a limit the kernel refuses is logged and the pod
// runs without it, as kubelet's Create does. The runtime puts the
// sandbox's and the containers' cgroups below it.
func (m *Manager) Ensure(ctx context.Context, pod *v1.Pod) error {
	if !podspec.ValidUID(pod.UID) {
		return fmt.Errorf("pod cgroup: uid %q: not a path component", pod.UID)
	}
	if m.Systemd {
		return m.ensureSlice(ctx, pod)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cg := m.cgroup(pod)
	mgr, err := manager.New(cg)
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", cg.Path, err)
	}
	if mgr.Exists() {
		return nil
	}
	if err := mgr.Apply(-1); err != nil {
		return fmt.Errorf("pod cgroup %s: create: %w", cg.Path, err)
	}
	if err := mgr.Set(cg.Resources); err != nil {
		m.warn("pod cgroup made without some of its limits", pod, cg.Path, err)
	}
	return nil
}

// ensureSlice starts the pod's slice with its limits (ensureSlice in
// slice.go), then writes its huge page limits, which systemd has no
// property for.
func (m *Manager) ensureSlice(ctx context.Context, pod *v1.Pod) error {
	slice := podspec.PodSlice(pod)
	cfg := podspec.PodCgroup(pod)
	made, err := ensureSlice(ctx, slice, cfg)
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", slice, err)
	}
	if !made || !hugetlbMounted() {
		return nil
	}
	dir, err := cgrouppath.ExpandSlice(slice)
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", slice, err)
	}
	if err := writeHugetlb(dir, cfg.HugePages); err != nil {
		m.warn("pod slice made without its huge page limits", pod, slice, err)
	}
	return nil
}

func (m *Manager) warn(msg string, pod *v1.Pod, cgroup string, err error) {
	if m.Log != nil {
		m.Log.Warn(msg, "pod", pod.Namespace+"/"+pod.Name, "cgroup", cgroup, "error", err)
	}
}

// cgroup is the library's description of the pod's cgroupfs cgroup: the
// CPU weight in v2's terms on v2 (the library writes no shares there).
func (m *Manager) cgroup(pod *v1.Pod) *cgroups.Cgroup {
	cfg := podspec.PodCgroup(pod)
	res := &cgroups.Resources{
		SkipDevices: true, // the containers' device rules are the runtime's
		CpuQuota:    cfg.CPUQuota,
		CpuPeriod:   cfg.CPUPeriod,
		Memory:      cfg.Memory,
	}
	if cgroups.IsCgroup2UnifiedMode() {
		res.CpuWeight = podspec.CPUWeight(cfg.CPUShares)
	} else {
		res.CpuShares = cfg.CPUShares
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

// writeHugetlb limits every huge page size of the host in the cgroup dir
// (below the hierarchy's root) to the pod's request, 0 by default. On v2
// the controller is enabled down to dir first (systemd, which has no
// hugetlb property, does not); on v1 a hierarchy without the cgroup has
// nothing to limit.
func writeHugetlb(dir string, requested map[string]int64) error {
	unified := cgroups.IsCgroup2UnifiedMode()
	if unified {
		if err := enableController(dir, "hugetlb"); err != nil {
			return err
		}
	}
	for _, size := range cgroups.HugePageSizes() {
		file := filepath.Join(cgroupRoot, dir, "hugetlb."+size+".max")
		if !unified {
			file = filepath.Join(cgroupRoot, "hugetlb", dir, "hugetlb."+size+".limit_in_bytes")
		}
		if _, err := os.Stat(file); err != nil {
			continue
		}
		if err := os.WriteFile(file, []byte(strconv.FormatInt(max(requested[size], 0), 10)), 0); err != nil {
			return err
		}
	}
	return nil
}

// enableController enables a v2 controller in the subtree_control of
// every ancestor of dir, from the root down, as runc and the cgroups
// library do for a cgroup they make.
func enableController(dir, controller string) error {
	cur := cgroupRoot
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if err := os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte("+"+controller), 0); err != nil {
			return fmt.Errorf("%s: enable %s: %w", cur, controller, err)
		}
		cur = filepath.Join(cur, part)
	}
	return nil
}

// cgroupRoot is where the cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// hugetlbMounted reports whether this host's cgroups have the hugetlb
// controller (kubelet sets huge page limits only then).
var hugetlbMounted = sync.OnceValue(func() bool {
	c, err := hostcgroup.Detect()
	return err == nil && c.Has("hugetlb")
})
