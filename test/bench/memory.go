package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// usage is one process's memory in KiB, from /proc/<pid>/smaps_rollup.
type usage struct {
	RSS, PSS int64
}

// readUsage reads Rss and Pss of a process.
func readUsage(pid int) (usage, error) {
	path := fmt.Sprintf("/proc/%d/smaps_rollup", pid)
	f, err := os.Open(path)
	if err != nil {
		return usage{}, err
	}
	defer f.Close()
	var u usage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			u.RSS = v
		case "Pss:":
			u.PSS = v
		}
	}
	if err := sc.Err(); err != nil {
		return u, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// memory is what section 3 of the report shows.
type memory struct {
	serveIdle       usage // right after start, no pods
	serveIdleAfter  usage // after the latency runs, no pods
	oneMonitor      usage // the monitor of the only pod, one sleep container
	pods            int   // pods running for the lines below
	monitorsMean    usage // mean over the monitors of `pods` pods
	monitorsTotal   usage
	serveWithPods   usage
	pause           usage // berth-pause of a pod with pid POD, alone
	pauseMonitor    usage // that pod's monitor (it holds berth-pause + sleep)
	containerSample usage // the sleep container of the one-pod case, for scale
}

// settle lets freshly started processes finish touching their pages.
const settle = 500 * time.Millisecond

// measureMemory runs the memory scenarios; every pod it makes is removed
// before it returns, and also on failure by the global cleanup.
func (d *daemon) measureMemory(ctx context.Context, pods int, m *memory) error {
	var err error
	if m.serveIdleAfter, err = readUsage(d.pid()); err != nil {
		return fmt.Errorf("berth serve: %w", err)
	}
	ids := make([]string, 0, pods)
	for i := 0; i < pods; i++ {
		id, err := d.startPodWithContainer(ctx, fmt.Sprintf("mem-%d", i), runtimeapi.NamespaceMode_CONTAINER)
		if id != "" {
			ids = append(ids, id)
		}
		if err != nil {
			return err
		}
		if i == 0 {
			if err := d.measureOneMonitor(ctx, id, m); err != nil {
				return err
			}
		}
	}
	if err := d.measureManyMonitors(ctx, ids, m); err != nil {
		return err
	}
	if err := d.removeAllPods(ctx); err != nil {
		return err
	}
	return d.measurePause(ctx, m)
}

func (d *daemon) measureOneMonitor(ctx context.Context, podID string, m *memory) error {
	time.Sleep(settle)
	monPid, _, err := d.podPids(ctx, podID)
	if err != nil {
		return err
	}
	if m.oneMonitor, err = readUsage(monPid); err != nil {
		return fmt.Errorf("berth-monitor pid %d: %w", monPid, err)
	}
	for _, child := range childrenOf(monPid) {
		if u, err := readUsage(child); err == nil {
			m.containerSample = u
		}
	}
	return nil
}

func (d *daemon) measureManyMonitors(ctx context.Context, ids []string, m *memory) error {
	time.Sleep(settle)
	m.pods = len(ids)
	for _, id := range ids {
		monPid, _, err := d.podPids(ctx, id)
		if err != nil {
			return err
		}
		u, err := readUsage(monPid)
		if err != nil {
			return fmt.Errorf("berth-monitor pid %d: %w", monPid, err)
		}
		m.monitorsTotal.RSS += u.RSS
		m.monitorsTotal.PSS += u.PSS
	}
	if m.pods > 0 {
		m.monitorsMean = usage{RSS: m.monitorsTotal.RSS / int64(m.pods), PSS: m.monitorsTotal.PSS / int64(m.pods)}
	}
	var err error
	if m.serveWithPods, err = readUsage(d.pid()); err != nil {
		return fmt.Errorf("berth serve: %w", err)
	}
	return nil
}

// measurePause runs one pod with pid POD (berth-pause as PID 1) and a sleep
// container, alone, and reads berth-pause and its monitor.
func (d *daemon) measurePause(ctx context.Context, m *memory) error {
	id, err := d.startPodWithContainer(ctx, "mem-pause", runtimeapi.NamespaceMode_POD)
	if err != nil {
		return err
	}
	time.Sleep(settle)
	monPid, pausePid, err := d.podPids(ctx, id)
	if err != nil {
		return err
	}
	if pausePid <= 0 {
		return fmt.Errorf("pod %s: pid POD but no berth-pause pid in its status", id)
	}
	if m.pause, err = readUsage(pausePid); err != nil {
		return fmt.Errorf("berth-pause pid %d: %w", pausePid, err)
	}
	if m.pauseMonitor, err = readUsage(monPid); err != nil {
		return fmt.Errorf("berth-monitor pid %d: %w", monPid, err)
	}
	return d.removePod(ctx, id)
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// Fields after the last ')' are: state ppid ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
