package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The host checks below look at the machine, not at a Daemon, so that
// tests which run berth their own way (test/e2e's containerd runtime)
// share them.

// IDPattern matches a 64-hex sandbox or container id.
var IDPattern = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// MountsUnder lists the mount points at or below any of dirs, deepest
// first (the order in which they can be unmounted).
func MountsUnder(dirs ...string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		for _, dir := range dirs {
			if under(mp, dir) {
				out = append(out, mp)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMountPath undoes mountinfo's octal escapes.
func unescapeMountPath(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// Proc is a process found by ProcessTree.
type Proc struct {
	PID     int
	Cmdline string // the arguments joined by spaces
}

// ProcessTree lists, by pid, the processes for which ours holds and all
// their descendants. The test's own process and the pids in skip (e.g. a
// daemon that still runs on purpose) are never listed.
func ProcessTree(ours func(pid int, cmdline string) bool, skip ...int) []Proc {
	entries, _ := os.ReadDir("/proc")
	found, parents, cmdlines := map[int]bool{}, map[int]int{}, map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || containsPid(skip, pid) {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		cmdlines[pid], parents[pid] = cmdline, parentPid(pid)
		if ours(pid, cmdline) {
			found[pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for pid, ppid := range parents {
			if !found[pid] && found[ppid] {
				found[pid], changed = true, true
			}
		}
	}
	var out []Proc
	for pid := range found {
		out = append(out, Proc{PID: pid, Cmdline: cmdlines[pid]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

func containsPid(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

// parentPid reads a process's parent from /proc/<pid>/stat.
func parentPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// InCgroupOf reports whether pid lives in a cgroup whose path names one of
// ids.
func InCgroupOf(pid int, ids map[string]bool) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, id := range IDPattern.FindAllString(string(b), -1) {
		if ids[id] {
			return true
		}
	}
	return false
}

// BerthCgroups lists, sorted, the cgroup directories anywhere under a
// hierarchy's berth subtree (/sys/fs/cgroup/<controller>/berth, or
// /sys/fs/cgroup/berth) whose name known accepts.
func BerthCgroups(known func(name string) bool) []string {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/berth")
	if _, err := os.Stat("/sys/fs/cgroup/berth"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/berth")
	}
	var out []string
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error { // best effort
			if err == nil && e.IsDir() && known(e.Name()) {
				out = append(out, p)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// RemoveCgroupTree removes a cgroup directory and its children, deepest
// first (cgroupfs directories are removed with rmdir only).
func RemoveCgroupTree(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error { // best effort
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // best effort
	}
}

// CgroupsNamed lists, sorted, the cgroup directories anywhere under
// /sys/fs/cgroup whose name known accepts: containerd's runc, given no
// cgroup parent, puts a container's cgroup below its shim's own.
func CgroupsNamed(known func(name string) bool) []string {
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, e os.DirEntry, err error) error { // best effort
		if err == nil && e.IsDir() && known(e.Name()) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(out)
	return out
}
