package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// proc is one process of a /proc scan.
type proc struct {
	pid, ppid int
	comm      string // /proc/<pid>/comm: at most 15 bytes of the name
	cmdline   string // arguments joined by spaces
}

// scanProcs lists every process it can read.
func scanProcs() []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		comm, rest, ok := parseStat(string(stat))
		if !ok || len(rest) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(rest[1])
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, proc{pid: pid, ppid: ppid, comm: comm, cmdline: strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))})
	}
	return out
}

// parseStat splits /proc/<pid>/stat into the command name (between the
// first '(' and the last ')') and the fields after it: state, ppid, ...
func parseStat(stat string) (comm string, rest []string, ok bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	return stat[open+1 : end], strings.Fields(stat[end+1:]), true
}

// podProcSelector says which processes a runtime runs per pod: the
// per-pod holders (berth-monitor, containerd-shim-runc-v2) of this run's
// daemon, told by their command line, and those of their children that
// are the pod's own helpers (berth-pause, containerd's pause container),
// told by name. The containers' processes are not counted.
type podProcSelector struct {
	holderComm  string   // comm of the holders ("containerd-shim" is the shim's, cut at 15 bytes)
	holderArg   string   // a string the holder's command line holds: the daemon's socket or state dir
	helperComms []string // comms of the holders' children to count
}

// selectPodProcs picks the holders and their helpers out of procs.
func (s podProcSelector) selectPodProcs(procs []proc) []proc {
	holders := map[int]bool{}
	var out []proc
	for _, p := range procs {
		if p.comm == s.holderComm && strings.Contains(p.cmdline, s.holderArg) {
			holders[p.pid] = true
			out = append(out, p)
		}
	}
	for _, p := range procs {
		if holders[p.ppid] && slices.Contains(s.helperComms, p.comm) {
			out = append(out, p)
		}
	}
	return out
}

// podMemory is the memory of a runtime's per-pod processes with a number
// of its pods up, and its daemon's.
type podMemory struct {
	pods      int   // pods up
	procs     int   // per-pod processes found
	pssKiB    int64 // their PSS, summed
	holderKiB int64 // of which the holders' (berth-monitor, the shim)
	daemonRSS int64 // KiB
}

// perPod is the PSS per pod in KiB, or 0 without pods.
func (m podMemory) perPod() int64 {
	if m.pods == 0 {
		return 0
	}
	return m.pssKiB / int64(m.pods)
}

// holderPerPod is the holders' PSS per pod in KiB, or 0 without pods.
func (m podMemory) holderPerPod() int64 {
	if m.pods == 0 {
		return 0
	}
	return m.holderKiB / int64(m.pods)
}

// readPodMemory sums the PSS of the processes s selects and reads the
// daemon's RSS.
func readPodMemory(s podProcSelector, daemonPid, pods int) (podMemory, error) {
	m := podMemory{pods: pods}
	for _, p := range s.selectPodProcs(scanProcs()) {
		u, err := readUsage(p.pid)
		if err != nil {
			return m, fmt.Errorf("%s pid %d: %w", p.comm, p.pid, err)
		}
		m.procs++
		m.pssKiB += u.PSS
		if p.comm == s.holderComm {
			m.holderKiB += u.PSS
		}
	}
	d, err := readUsage(daemonPid)
	if err != nil {
		return m, fmt.Errorf("daemon pid %d: %w", daemonPid, err)
	}
	m.daemonRSS = d.RSS
	return m, nil
}
