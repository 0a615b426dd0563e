package containerd

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// leftovers lists what the agent and containerd should have released
// once every pod is deleted and both have stopped.
func (e *env) leftovers() []string {
	var out []string
	add := func(kind string, items []string) {
		for _, it := range items {
			out = append(out, kind+" "+it)
		}
	}
	add("mount", e.mountsLeft())
	for _, p := range e.processesLeft() {
		out = append(out, fmt.Sprintf("process %d: %s", p.pid, p.cmdline))
	}
	add("host-local IP allocation", e.net.Allocations())
	add("link on bridge "+e.net.Bridge+":", e.net.VethsOnBridge())
	add("iptables rule", e.net.IptablesRules())
	add("cgroup", e.cgroupsLeft())
	add("CNI result cache file", e.cniResultsLeft())
	add("shim socket", e.shimSocketsLeft())
	add("pod directory", e.podDirsLeft())
	return out
}

// mountsLeft lists the mount points under the test's root and state
// directories (the containers' root file systems, the sandboxes' /dev/shm
// and network namespaces live there), deepest first.
func (e *env) mountsLeft() []string {
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
		if under(mp, e.root) || under(mp, e.state) {
			out = append(out, mp)
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

type proc struct {
	pid     int
	cmdline string
}

// processesLeft lists the processes of the test's containerd: those whose
// command line names its directories (its shims: -address <socket>), those
// in a cgroup named after a sandbox or container it ran, and all their
// descendants. The test's own process, and the agent and containerd while
// they run, are not among them.
func (e *env) processesLeft() []proc {
	entries, _ := os.ReadDir("/proc")
	ours, parents, cmdlines := map[int]bool{}, map[int]int{}, map[int]string{}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() || pid == e.agent.pid() || pid == e.ctrd.pid() {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		cmdlines[pid], parents[pid] = cmdline, parentPid(pid)
		if strings.Contains(cmdline, e.state+"/") || strings.Contains(cmdline, e.root+"/") || e.inSeenCgroup(pid) {
			ours[pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for pid, ppid := range parents {
			if !ours[pid] && ours[ppid] {
				ours[pid], changed = true, true
			}
		}
	}
	var out []proc
	for pid := range ours {
		out = append(out, proc{pid: pid, cmdline: cmdlines[pid]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
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

// inSeenCgroup reports whether a process lives in a cgroup named after a
// sandbox or container the test has seen.
func (e *env) inSeenCgroup(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, id := range idPattern.FindAllString(string(b), -1) {
		if e.seen.ids[id] {
			return true
		}
	}
	return false
}

// cgroupsLeft lists the cgroup directories, in every hierarchy's berth
// subtree (the agent's pod cgroup parent), named after a seen sandbox or
// container id or a seen pod (pod<uid>).
func (e *env) cgroupsLeft() []string {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/berth")
	roots = append(roots, "/sys/fs/cgroup/berth")
	var out []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error { //nolint:errcheck // a missing root is fine
			if err != nil || !d.IsDir() {
				return nil
			}
			name := d.Name()
			if e.seen.ids[name] || (strings.HasPrefix(name, "pod") && e.seen.podUIDs[strings.TrimPrefix(name, "pod")]) {
				out = append(out, p)
				return filepath.SkipDir
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// removeCgroupTree removes a cgroup directory and its children, deepest
// first (cgroupfs directories go with rmdir only).
func removeCgroupTree(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error { //nolint:errcheck // best effort
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) //nolint:errcheck // best effort
	}
}

// cniResultsLeft lists libcni's cached results of the test's sandboxes:
// those of its network, and those of the loopback network containerd sets
// up in every sandbox (cni-loopback-<sandbox id>-lo).
func (e *env) cniResultsLeft() []string {
	files, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", e.net.Name+"-*"))
	for id := range e.seen.ids {
		path := filepath.Join("/var/lib/cni/results", "cni-loopback-"+id+"-lo")
		if _, err := os.Lstat(path); err == nil {
			files = append(files, path)
		}
	}
	return files
}

// shimSocketsLeft lists the sockets of the shims of the test's sandboxes:
// the runc v2 shim listens on /run/containerd/s/<sha256 of
// "<containerd address>/<namespace>/<sandbox id>">.
func (e *env) shimSocketsLeft() []string {
	var out []string
	for id := range e.seen.ids {
		sum := sha256.Sum256([]byte(filepath.Join(e.ctrd.socket, criNamespace, id)))
		path := filepath.Join("/run/containerd/s", fmt.Sprintf("%x", sum))
		if _, err := os.Lstat(path); err == nil {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// podDirsLeft lists the pods' log directories and the agent's per-pod
// (volume) directories.
func (e *env) podDirsLeft() []string {
	var out []string
	for _, dir := range []string{e.podLogDir, filepath.Join(e.berthRoot(), "agent", "pods")} {
		entries, _ := os.ReadDir(dir)
		for _, ent := range entries {
			out = append(out, filepath.Join(dir, ent.Name()))
		}
	}
	return out
}
