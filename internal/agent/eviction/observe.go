package eviction

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FsStats is a filesystem's size and what is free of it.
type FsStats struct {
	Capacity, Available int64 // bytes (available to unprivileged users)
	Inodes, InodesFree  int64
}

// HostObserver measures the signals on this machine. Every field but
// NodeFsPath is optional; the zero values read the host.
type HostObserver struct {
	// NodeFsPath is a directory on the node filesystem (the agent's root).
	NodeFsPath string
	// ImageFsPath returns a directory on the runtime's image filesystem
	// (CRI ImageFsInfo's mountpoint); nil or an error: imagefs signals are
	// not observed.
	ImageFsPath func(ctx context.Context) (string, error)
	// ProcDir and CgroupDir default to /proc and /sys/fs/cgroup.
	ProcDir, CgroupDir string
	// Statfs defaults to statfs(2).
	Statfs func(path string) (FsStats, error)
	// Processes counts the running processes; default sysinfo(2).
	Processes func() (int64, error)
}

// Observe measures every signal it can; it fails only when none could be.
// What one signal could not measure is left out and reported in err
// alongside the others.
func (h HostObserver) Observe(ctx context.Context) (Observations, error) {
	obs := Observations{}
	var errs []error
	if o, err := h.memory(); err == nil {
		obs[SignalMemoryAvailable] = o
	} else {
		errs = append(errs, fmt.Errorf("memory.available: %w", err))
	}
	if st, err := h.statfs(h.NodeFsPath); err == nil {
		obs[SignalNodeFsAvailable] = Observation{Available: st.Available, Capacity: st.Capacity}
		obs[SignalNodeFsInodesFree] = Observation{Available: st.InodesFree, Capacity: st.Inodes}
	} else {
		errs = append(errs, fmt.Errorf("nodefs (%s): %w", h.NodeFsPath, err))
	}
	if h.ImageFsPath != nil {
		path, err := h.ImageFsPath(ctx)
		var st FsStats
		if err == nil {
			st, err = h.statfs(path)
		}
		if err == nil {
			obs[SignalImageFsAvailable] = Observation{Available: st.Available, Capacity: st.Capacity}
			obs[SignalImageFsInodesFree] = Observation{Available: st.InodesFree, Capacity: st.Inodes}
		} else {
			errs = append(errs, fmt.Errorf("imagefs: %w", err))
		}
	}
	if o, err := h.pids(); err == nil {
		obs[SignalPIDAvailable] = o
	} else {
		errs = append(errs, fmt.Errorf("pid.available: %w", err))
	}
	return obs, errors.Join(errs...)
}

func (h HostObserver) dir(p, def string) string {
	if p != "" {
		return p
	}
	return def
}

func (h HostObserver) statfs(path string) (FsStats, error) {
	if h.Statfs != nil {
		return h.Statfs(path)
	}
	return Statfs(path)
}

// Statfs reads a filesystem's size with statfs(2).
func Statfs(path string) (FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := st.Bsize
	return FsStats{
		Capacity: int64(st.Blocks) * bsize, Available: int64(st.Bavail) * bsize,
		Inodes: int64(st.Files), InodesFree: int64(st.Ffree),
	}, nil
}

// memory is kubelet's memory.available: MemTotal minus the root cgroup's
// working set (usage minus inactive file pages). Under cgroup v1 the
// usage is the memory hierarchy root's; under v2, whose root has no
// memory.current, it is MemTotal minus MemFree, and the inactive file
// pages come from /proc/meminfo.
func (h HostObserver) memory() (Observation, error) {
	info, err := readKeyValues(filepath.Join(h.dir(h.ProcDir, "/proc"), "meminfo"), 1024)
	if err != nil {
		return Observation{}, err
	}
	total, ok := info["MemTotal:"]
	if !ok {
		return Observation{}, errors.New("/proc/meminfo: no MemTotal")
	}
	usage, inactive := total-info["MemFree:"], info["Inactive(file):"]
	v1Root := filepath.Join(h.dir(h.CgroupDir, "/sys/fs/cgroup"), "memory")
	if raw, err := os.ReadFile(filepath.Join(v1Root, "memory.usage_in_bytes")); err == nil {
		if usage, err = strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err != nil {
			return Observation{}, fmt.Errorf("memory.usage_in_bytes: %w", err)
		}
		stat, err := readKeyValues(filepath.Join(v1Root, "memory.stat"), 1)
		if err != nil {
			return Observation{}, err
		}
		inactive = stat["total_inactive_file"]
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Observation{}, err
	}
	workingSet := max(usage-inactive, 0)
	return Observation{Available: total - workingSet, Capacity: total}, nil
}

// pids is kubelet's pid.available: the smaller of kernel.pid_max and
// kernel.threads-max, minus the running processes.
func (h HostObserver) pids() (Observation, error) {
	proc := h.dir(h.ProcDir, "/proc")
	capacity, err := readInt(filepath.Join(proc, "sys/kernel/pid_max"))
	if err != nil {
		return Observation{}, err
	}
	if threads, err := readInt(filepath.Join(proc, "sys/kernel/threads-max")); err == nil && threads < capacity {
		capacity = threads
	}
	count := h.Processes
	if count == nil {
		count = sysinfoProcs
	}
	n, err := count()
	if err != nil {
		return Observation{}, err
	}
	return Observation{Available: capacity - n, Capacity: capacity}, nil
}

func sysinfoProcs() (int64, error) {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return 0, fmt.Errorf("sysinfo: %w", err)
	}
	return int64(info.Procs), nil
}

func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// readKeyValues reads "key value [unit]" lines, each value times scale.
func readKeyValues(path string, scale int64) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		if n, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
			out[fields[0]] = n * scale
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
