package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// hostInfo describes the machine the numbers come from.
type hostInfo struct {
	kernel, cpu, runc string
	cpus              int
	memTotal          string
}

func readHostInfo() hostInfo {
	h := hostInfo{cpus: runtime.NumCPU(), kernel: "?", cpu: "?", runc: "?", memTotal: "?"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.cpu = firstValue(string(b), "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		h.memTotal = firstValue(string(b), "MemTotal")
	}
	if out, err := exec.Command(runcBinary, "--version").Output(); err == nil {
		h.runc = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	return h
}

// firstValue returns the value of the first "key : value" line.
func firstValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// loadAverage is the 1/5/15-minute load average: other work on the machine
// shows up in the latencies.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
