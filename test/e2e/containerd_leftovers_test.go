package e2e

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/test/harness"
)

// leftovers lists what the agent and containerd should have released
// once every pod is deleted and both have stopped.
func (c *ctrdNode) leftovers() []string {
	var out []string
	add := func(kind string, items []string) {
		for _, it := range items {
			out = append(out, kind+" "+it)
		}
	}
	add("mount", c.mountsLeft())
	for _, p := range c.processesLeft() {
		out = append(out, fmt.Sprintf("process %d: %s", p.PID, p.Cmdline))
	}
	add("host-local IP allocation", c.network.Allocations())
	add("link on bridge "+c.network.Bridge+":", c.network.VethsOnBridge())
	add("iptables rule", c.network.IptablesRules())
	add("cgroup", c.cgroupsLeft())
	add("CNI result cache file", c.cniResultsLeft())
	add("shim socket", c.shimSocketsLeft())
	return out
}

// mountsLeft lists the mount points under the test's root and state
// directories (the containers' root file systems, the sandboxes' /dev/shm
// and network namespaces live there), deepest first.
func (c *ctrdNode) mountsLeft() []string { return harness.MountsUnder(c.root, c.state) }

// processesLeft lists the processes of the test's containerd: those whose
// command line names its directories (its shims: -address <socket>), those
// in a cgroup named after a sandbox or container it ran, and all their
// descendants. The test's own process, and the agent and containerd while
// they run, are not among them.
func (c *ctrdNode) processesLeft() []harness.Proc {
	return harness.ProcessTree(func(pid int, cmdline string) bool {
		return strings.Contains(cmdline, c.state+"/") || strings.Contains(cmdline, c.root+"/") ||
			harness.InCgroupOf(pid, c.seen.ids)
	}, c.agent.Pid(), c.ctrd.Pid())
}

// cgroupsLeft lists the cgroup directories, in every hierarchy's berth
// subtree (the agent's pod cgroup parent), named after a seen sandbox or
// container id or a seen pod (pod<uid>).
func (c *ctrdNode) cgroupsLeft() []string {
	return harness.BerthCgroups(func(name string) bool {
		return c.seen.ids[name] || (strings.HasPrefix(name, "pod") && c.seen.podUIDs[strings.TrimPrefix(name, "pod")])
	})
}

// cniResultsLeft lists libcni's cached results of the test's sandboxes.
func (c *ctrdNode) cniResultsLeft() []string {
	return harness.ContainerdCNIResults(c.network.Name, c.seen.ids)
}

// shimSocketsLeft lists the sockets of the shims of the test's sandboxes.
func (c *ctrdNode) shimSocketsLeft() []string { return c.ctrd.ShimSockets(c.seen.ids) }
