package cgroupstats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	"github.com/containerd/cgroups/v3/cgroup2"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"

	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/errdefs"
)

// Sample is the usage of one cgroup at one moment.
type Sample struct {
	Time               time.Time
	CPUUsageNanos      uint64 // cumulative CPU time of every task, in ns
	MemoryUsage        uint64 // bytes, page cache included
	MemoryWorkingSet   uint64 // usage minus inactive file pages
	MemoryRSS          uint64 // anonymous memory
	PageFaults         uint64
	MajorPageFaults    uint64
	Pids               uint64 // tasks in the cgroup now
	MemoryInactiveFile uint64 // inactive file pages (reclaimable page cache)

	// Pressure stall information of cgroup v2 (cpu.pressure,
	// memory.pressure, io.pressure); nil on v1 and where the kernel has no
	// PSI (CONFIG_PSI off, or booted with psi=0).
	CPUPressure, MemoryPressure, IOPressure *Pressure
}

// Pressure is one resource's PSI: how long some, or all, of the cgroup's
// tasks stalled waiting for it.
type Pressure struct {
	Some, Full PressureData
}

// PressureData is one line of a *.pressure file.
type PressureData struct {
	TotalMicros          uint64  // cumulative stall time, µs
	Avg10, Avg60, Avg300 float64 // share of time stalled (%) over 10 s, 60 s, 300 s
}

// Reader reads cgroups below a cgroupfs root.
type Reader struct {
	// Root is the cgroupfs mount: /sys/fs/cgroup when empty. Under v1 it
	// holds one directory per controller (cpuacct, memory, pids).
	Root string
	// Unified selects cgroup v2; the zero Reader detects the host's mode.
	Unified bool
}

// Host returns a Reader for this host's cgroup mode: v2 only when the host
// runs the unified hierarchy alone (hybrid hosts keep their controllers in v1).
func Host() Reader {
	return Reader{Root: "/sys/fs/cgroup", Unified: cgroups.Mode() == cgroups.Unified}
}

func (r Reader) root() string {
	if r.Root == "" {
		return "/sys/fs/cgroup"
	}
	return r.Root
}

// Read samples the cgroup of an OCI cgroupsPath in either driver's form:
// a path such as /kubepods/pod1/c1, or kubepods-pod1.slice:berth:c1 for the
// systemd scope /kubepods.slice/kubepods-pod1.slice/berth-c1.scope.
func (r Reader) Read(cgroupsPath string) (Sample, error) {
	path, err := cgrouppath.Dir(cgroupsPath)
	if err != nil {
		return Sample{}, fmt.Errorf("cgroup %s: %w", cgroupsPath, err)
	}
	now := time.Now()
	var s Sample
	if r.Unified {
		s, err = r.readV2(path)
	} else {
		s, err = r.readV1(path)
	}
	if err != nil {
		return Sample{}, fmt.Errorf("cgroup %s: %w", path, err)
	}
	s.Time = now
	return s, nil
}

func (r Reader) readV2(path string) (Sample, error) {
	if _, err := os.Stat(filepath.Join(r.root(), path)); err != nil {
		return Sample{}, notFound(err)
	}
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(r.root()))
	if err != nil {
		return Sample{}, err
	}
	st, err := m.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatPids | cgroup2.StatIO)
	if err != nil {
		return Sample{}, notFound(err)
	}
	return fromV2(st), nil
}

func fromV2(st *v2.Metrics) Sample {
	var s Sample
	if cpu := st.GetCPU(); cpu != nil {
		s.CPUUsageNanos = cpu.GetUsageUsec() * 1000
	}
	if mem := st.GetMemory(); mem != nil {
		s.MemoryUsage = mem.GetUsage()
		s.MemoryInactiveFile = mem.GetInactiveFile()
		s.MemoryWorkingSet = workingSet(s.MemoryUsage, s.MemoryInactiveFile)
		s.MemoryRSS = mem.GetAnon()
		s.PageFaults = mem.GetPgfault()
		s.MajorPageFaults = mem.GetPgmajfault()
	}
	s.Pids = st.GetPids().GetCurrent()
	s.CPUPressure = pressure(st.GetCPU().GetPSI())
	s.MemoryPressure = pressure(st.GetMemory().GetPSI())
	s.IOPressure = pressure(st.GetIo().GetPSI())
	return s
}

// pressure converts the library's PSI; nil when the file was missing or
// unreadable.
func pressure(p *v2.PSIStats) *Pressure {
	if p == nil || p.GetSome() == nil {
		return nil
	}
	data := func(d *v2.PSIData) PressureData {
		return PressureData{TotalMicros: d.GetTotal(), Avg10: d.GetAvg10(), Avg60: d.GetAvg60(), Avg300: d.GetAvg300()}
	}
	return &Pressure{Some: data(p.GetSome()), Full: data(p.GetFull())}
}

func (r Reader) readV1(path string) (Sample, error) {
	root := r.root()
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewCpuacct(root),
			cgroup1.NewMemory(root),
			cgroup1.NewPids(root),
		}, nil
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		return Sample{}, notFound(err)
	}
	st, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Sample{}, notFound(err)
	}
	return fromV1(st), nil
}

func fromV1(st *v1.Metrics) Sample {
	var s Sample
	s.CPUUsageNanos = st.GetCPU().GetUsage().GetTotal()
	if mem := st.GetMemory(); mem != nil {
		s.MemoryUsage = mem.GetUsage().GetUsage()
		s.MemoryInactiveFile = mem.GetTotalInactiveFile()
		s.MemoryWorkingSet = workingSet(s.MemoryUsage, s.MemoryInactiveFile)
		s.MemoryRSS = mem.GetTotalRSS()
		s.PageFaults = mem.GetTotalPgFault()
		s.MajorPageFaults = mem.GetTotalPgMajFault()
	}
	s.Pids = st.GetPids().GetCurrent()
	return s
}

// workingSet is usage minus inactive file pages, as kubelet evicts by it.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

func notFound(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("%w: %w", errdefs.ErrNotFound, err)
	}
	return err
}
