package cgroupstats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"

	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/errdefs"
)

// Reader reads cgroups below a cgroupfs root.
type Reader struct {
	// Root is the cgroupfs mount: /sys/fs/cgroup when empty. Under v1 it
	// holds one directory per controller (cpu, cpuacct, memory, pids, blkio,
	// hugetlb) and, on hybrid hosts, the unified hierarchy as unified/.
	Root string
	// Unified selects cgroup v2; the zero Reader detects the host's mode.
	Unified bool
	// Proc and Sys are procfs and sysfs: /proc and /sys when empty.
	Proc, Sys string
}

// Host returns a Reader for this host's cgroup mode: v2 only when the host
// runs the unified hierarchy alone (hybrid hosts keep their controllers in v1).
func Host() Reader {
	return Reader{Root: "/sys/fs/cgroup", Unified: cgroups.Mode() == cgroups.Unified}
}

func (r Reader) root() string { return orDefault(r.Root, "/sys/fs/cgroup") }
func (r Reader) proc() string { return orDefault(r.Proc, "/proc") }
func (r Reader) sys() string  { return orDefault(r.Sys, "/sys") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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
	for i := range s.IO {
		d := &s.IO[i]
		d.Device = deviceName(r.sys(), d.Major, d.Minor)
	}
	s.Time = now
	return s, nil
}

func (r Reader) readV2(path string) (Sample, error) {
	dir := filepath.Join(r.root(), path)
	if _, err := os.Stat(dir); err != nil {
		return Sample{}, notFound(err)
	}
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(r.root()))
	if err != nil {
		return Sample{}, err
	}
	st, err := m.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatPids | cgroup2.StatIO)
	if err != nil {
		return Sample{}, notFound(err)
	}
	s := fromV2(st)
	s.Memory.Kernel = kernelMemoryV2(readKV(filepath.Join(dir, "memory.stat")))
	s.Hugetlb = readHugetlb(dir, true)
	readPressures(dir, &s)
	return s, nil
}

func (r Reader) readV1(path string) (Sample, error) {
	root := r.root()
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewCpu(root),
			cgroup1.NewCpuacct(root),
			cgroup1.NewMemory(root, cgroup1.OptionalSwap()),
			cgroup1.NewPids(root),
			cgroup1.NewBlkio(root, cgroup1.ProcRoot(r.proc())),
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
	s := fromV1(st)
	s.Hugetlb = readHugetlb(filepath.Join(root, "hugetlb", path), false)
	// A hybrid host's unified hierarchy holds no controllers, but the
	// kernel keeps PSI for every cgroup in it, and runc puts the container
	// there as well.
	readPressures(filepath.Join(root, "unified", path), &s)
	return s, nil
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
