package pod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-dev/berth/internal/cgroupstats"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/network"
)

// ContainerStats is the resource usage of one container. Usage is zero and
// HasUsage false when the container has no cgroup (not running).
type ContainerStats struct {
	Container     Container
	Time          time.Time // when the sample was taken
	Usage         cgroupstats.Sample
	HasUsage      bool
	NanoCores     uint64 // CPU rate since the previous sample of this container
	HasNanoCores  bool
	WritableLayer DiskUsage
	// OOMKills counts the kernel's OOM kills in the container's cgroup
	// while it runs; an exited container killed so counts at least one.
	OOMKills uint64

	// Detail, sampled by SandboxMetrics only (it reads procfs and statfs):
	// the processes of a running container, and the filesystem that holds
	// the writable layer.
	Processes    cgroupstats.Processes
	HasProcesses bool
	LayerFS      Filesystem
	HasLayerFS   bool
}

// Filesystem is the filesystem holding a directory, from statfs(2).
type Filesystem struct {
	Device        string // as cAdvisor names it: /dev/<name>, or major:minor
	CapacityBytes uint64
	Inodes        uint64
	InodesFree    uint64
}

// DiskUsage is the space held by a directory tree (hard links counted once).
type DiskUsage struct {
	Path   string
	Bytes  uint64 // allocated blocks × 512, like du
	Inodes uint64
	Time   time.Time
}

// SandboxStats is the resource usage of a pod: the sum of its containers'
// cgroups and the counters of the interfaces in its network namespace.
type SandboxStats struct {
	Sandbox      Sandbox
	Usage        cgroupstats.Sample // summed over the containers with usage
	NanoCores    uint64
	HasNanoCores bool
	Interfaces   []InterfaceCounters
	Containers   []ContainerStats
}

// InterfaceCounters are one pod interface's traffic counters, as network
// reads them. pod hands them to criserver, which must not import network
// (docs/architecture.md).
type InterfaceCounters = network.InterfaceCounters

// ContainerStats samples a container by id or unique id prefix.
func (s *Service) ContainerStats(id string) (ContainerStats, error) {
	e, err := s.findContainer(id)
	if err != nil {
		return ContainerStats{}, err
	}
	s.refreshExit(e)
	return s.containerStats(e.snapshot(), false)
}

// containerStats samples a container; detail adds its processes and the
// writable layer's filesystem.
func (s *Service) containerStats(rec Container, detail bool) (ContainerStats, error) {
	st := ContainerStats{Container: rec, Time: time.Now()}
	upper := filepath.Join(rec.Dir, "upper")
	layer, err := diskUsage(upper)
	if err != nil && !errdefs.IsNotFound(err) {
		return st, fmt.Errorf("container %s: writable layer: %w", rec.ID, err)
	}
	st.WritableLayer = layer
	if detail && err == nil {
		st.LayerFS, err = filesystemOf(upper)
		st.HasLayerFS = err == nil
	}
	if rec.Reason == ReasonOOMKilled {
		st.OOMKills = 1
	}
	if rec.State != ContainerRunning || rec.CgroupPath == "" {
		return st, nil
	}
	sample, err := cgroupstats.Host().Read(rec.CgroupPath)
	if errdefs.IsNotFound(err) {
		return st, nil // exited since the record was read
	}
	if err != nil {
		return st, fmt.Errorf("container %s: %w", rec.ID, err)
	}
	st.Usage, st.HasUsage = sample, true
	st.OOMKills = max(st.OOMKills, sample.Memory.OOMKills)
	st.NanoCores, st.HasNanoCores = s.cpuRates.NanoCores(rec.ID, sample)
	if detail {
		// A process list that fails (the cgroup went meanwhile) is left out.
		st.Processes, err = cgroupstats.Host().Processes(rec.CgroupPath, rec.Pid)
		st.HasProcesses = err == nil
	}
	return st, nil
}

// SandboxStats samples a sandbox and its containers.
func (s *Service) SandboxStats(id string) (SandboxStats, error) {
	return s.sandboxStats(id, false)
}

// SandboxMetrics samples a sandbox and its containers in the detail CRI
// metrics need: SandboxStats plus each container's processes and
// writable-layer filesystem.
func (s *Service) SandboxMetrics(id string) (SandboxStats, error) {
	return s.sandboxStats(id, true)
}

func (s *Service) sandboxStats(id string, detail bool) (SandboxStats, error) {
	e, err := s.findSandbox(id)
	if err != nil {
		return SandboxStats{}, err
	}
	rec := e.snapshot()
	st := SandboxStats{Sandbox: rec, Usage: cgroupstats.Sample{Time: time.Now()}}
	for _, c := range s.containersOf(rec.ID) {
		s.refreshExit(c)
		cs, err := s.containerStats(c.snapshot(), detail)
		if err != nil {
			return st, fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
		}
		st.Containers = append(st.Containers, cs)
		addUsage(&st, &cs)
	}
	if !rec.HostNetwork && rec.State == SandboxReady && s.host.IsPinned(rec.NetNS) {
		if st.Interfaces, err = network.InterfaceStats(rec.NetNS); err != nil {
			return st, fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
		}
	}
	return st, nil
}

// addUsage adds a container's usage to its pod's.
func addUsage(pod *SandboxStats, c *ContainerStats) {
	if !c.HasUsage {
		return
	}
	u := &pod.Usage
	u.CPUUsageNanos += c.Usage.CPUUsageNanos
	u.MemoryUsage += c.Usage.MemoryUsage
	u.MemoryWorkingSet += c.Usage.MemoryWorkingSet
	u.MemoryRSS += c.Usage.MemoryRSS
	u.PageFaults += c.Usage.PageFaults
	u.MajorPageFaults += c.Usage.MajorPageFaults
	u.Pids += c.Usage.Pids
	u.MemoryInactiveFile += c.Usage.MemoryInactiveFile
	if c.HasNanoCores {
		pod.NanoCores += c.NanoCores
		pod.HasNanoCores = true
	}
}

// diskUsage walks a directory tree; a missing root is ErrNotFound, a file
// that vanishes during the walk is skipped.
func diskUsage(root string) (DiskUsage, error) {
	du := DiskUsage{Path: root, Time: time.Now()}
	if _, err := os.Lstat(root); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return du, fmt.Errorf("%s: %w", root, errdefs.ErrNotFound)
		}
		return du, err
	}
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed while walking
		}
		st, ok := statOf(info)
		if !ok || seen[inode{st.dev, st.ino}] {
			return nil
		}
		seen[inode{st.dev, st.ino}] = true
		du.Inodes++
		du.Bytes += st.blocks * 512
		return nil
	})
	return du, err
}
