package cgroupstats

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/internal/cgrouppath"
)

// Processes is what procfs tells of a cgroup's processes, as cAdvisor
// gathers it: the processes listed in cgroup.procs, their open file
// descriptors and, of those, the sockets, and the init process's soft
// limit on open files.
//
// The work is bounded: at most maxScannedProcs processes have their fd
// directories listed (FDs counts those), and at most maxReadLinks
// descriptors are read to tell sockets from files (Sockets counts those);
// Partial says a bound was reached.
type Processes struct {
	Count   uint64 // processes (not threads) in the cgroup
	FDs     uint64
	Sockets uint64
	Partial bool

	MaxOpenFiles    uint64 // soft RLIMIT_NOFILE of the init process; 0 for unlimited
	HasMaxOpenFiles bool
}

// The bounds of one Processes call (variables for the tests).
var (
	maxScannedProcs = 1024
	maxReadLinks    = 16384
)

// Processes reads the processes of the cgroup of an OCI cgroupsPath and the
// limits of initPid (none when initPid is 0). A cgroup that does not exist
// has no processes and is no error: the container may just have exited.
func (r Reader) Processes(cgroupsPath string, initPid int) (Processes, error) {
	path, err := cgrouppath.Dir(cgroupsPath)
	if err != nil {
		return Processes{}, fmt.Errorf("cgroup %s: %w", cgroupsPath, err)
	}
	var p Processes
	pids := r.cgroupProcs(path)
	p.Count = uint64(len(pids))
	links := 0
	for i, pid := range pids {
		if i == maxScannedProcs {
			p.Partial = true
			break
		}
		links = r.countFDs(pid, &p, links)
	}
	if initPid > 0 {
		p.MaxOpenFiles, p.HasMaxOpenFiles = readMaxOpenFiles(filepath.Join(r.proc(), strconv.Itoa(initPid), "limits"))
	}
	return p, nil
}

// cgroupProcs lists the cgroup's processes: from its v2 directory, or on
// v1 from the first controller that has it (cAdvisor reads the cpu one).
func (r Reader) cgroupProcs(path string) []string {
	dirs := []string{filepath.Join(r.root(), path)}
	if !r.Unified {
		dirs = dirs[:0]
		for _, c := range []string{"cpu", "cpuacct", "pids", "memory"} {
			dirs = append(dirs, filepath.Join(r.root(), c, path))
		}
	}
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err == nil {
			return strings.Fields(string(data))
		}
	}
	return nil
}

// countFDs adds a process's descriptors and sockets to p; links is the
// number of descriptors read so far, returned updated. A process that
// exits meanwhile adds nothing.
func (r Reader) countFDs(pid string, p *Processes, links int) int {
	dir := filepath.Join(r.proc(), pid, "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return links
	}
	p.FDs += uint64(len(fds))
	for _, fd := range fds {
		if links == maxReadLinks {
			p.Partial = true
			return links
		}
		links++
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:") {
			p.Sockets++
		}
	}
	return links
}

// readMaxOpenFiles reads the soft limit of the "Max open files" line of a
// /proc/<pid>/limits file; "unlimited" is 0.
func readMaxOpenFiles(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		if fields[0] == "unlimited" {
			return 0, true
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}
