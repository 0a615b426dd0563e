package containerd

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/berth-dev/berth/test/harness"
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
		out = append(out, fmt.Sprintf("process %d: %s", p.PID, p.Cmdline))
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
func (e *env) mountsLeft() []string { return harness.MountsUnder(e.root, e.state) }

// processesLeft lists the processes of the test's containerd: those whose
// command line names its directories (its shims: -address <socket>), those
// in a cgroup named after a sandbox or container it ran, and all their
// descendants. The test's own process, and the agent and containerd while
// they run, are not among them.
func (e *env) processesLeft() []harness.Proc {
	return harness.ProcessTree(func(pid int, cmdline string) bool {
		return strings.Contains(cmdline, e.state+"/") || strings.Contains(cmdline, e.root+"/") ||
			harness.InCgroupOf(pid, e.seen.ids)
	}, e.agent.pid(), e.ctrd.pid())
}

// cgroupsLeft lists the cgroup directories, in every hierarchy's berth
// subtree (the agent's pod cgroup parent), named after a seen sandbox or
// container id or a seen pod (pod<uid>).
func (e *env) cgroupsLeft() []string {
	return harness.BerthCgroups(func(name string) bool {
		return e.seen.ids[name] || (strings.HasPrefix(name, "pod") && e.seen.podUIDs[strings.TrimPrefix(name, "pod")])
	})
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
