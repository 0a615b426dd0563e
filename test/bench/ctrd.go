package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// benchContainerd is a private containerd of the bench (test/harness's,
// as the e2e suite runs it), of a flavour: Debian's 1.6 or a 2.x built
// from its module. Its root and state lie below the run's (<root>/<tag>,
// <state>/<tag>), its runc is the system's, and its CNI network is its
// own (bridge <prefix><id>, another free subnet) written by the code that
// writes berth's default network, so that every runtime runs the same
// plugins with the same options.
type benchContainerd struct {
	*harness.Containerd
	e           *env
	tag         string // its directories' name, in pod names too
	root, state string // the parents of its directories and socket
	work        string // config, log, image archive, CNI config, hosts
	net         harness.Network
	ids         map[string]bool // every sandbox and container id seen
	// absentHostDirs are the harness.ContainerdHostDirs and
	// ContainerdNamespaceCgroups that did not exist before it started.
	absentHostDirs []string
}

// newBenchContainerd lays a containerd of flavour f out under the tag
// (ctrd, ctrd2) with a network named prefix+id on a subnet that is
// neither berth's nor one of taken; it creates nothing.
func newBenchContainerd(e *env, f harness.ContainerdFlavour, tag, prefix string, taken ...*net.IPNet) *benchContainerd {
	c := &benchContainerd{
		e: e, tag: tag, root: filepath.Join(e.root, tag), state: filepath.Join(e.state, tag),
		work: filepath.Join(e.work, tag), ids: map[string]bool{},
	}
	c.Containerd = harness.NewContainerd(f, c.root, c.state, filepath.Join(c.work, "containerd.log"))
	taken = append(taken, e.subnet)
	c.net = harness.NewNetwork(prefix, e.id, filepath.Join(c.root, "cni", "networks"))
	for slices.ContainsFunc(taken, func(n *net.IPNet) bool { return n.String() == c.net.Subnet.String() }) {
		c.net = harness.NewNetwork(prefix, e.id, c.net.DataDir)
	}
	return c
}

// start writes the configs, launches containerd, checks that it cannot
// pull from the internet and imports the sandbox image and busybox (the
// same image as berth's: ref, with sh as its command).
func (c *benchContainerd) start(ref string) error {
	if err := os.MkdirAll(c.work, 0o700); err != nil {
		return err
	}
	c.absentHostDirs = harness.AbsentDirs(append(harness.ContainerdHostDirs, harness.ContainerdNamespaceCgroups()...))
	confDir, hosts := filepath.Join(c.work, "net.d"), filepath.Join(c.work, "certs.d")
	_, _, err := network.InstallDefault(confDir, network.DefaultNetwork{
		Name: c.net.Name, Bridge: c.net.Bridge, Subnet: c.net.Subnet.String(), DataDir: c.net.DataDir,
	})
	if err != nil {
		return fmt.Errorf("containerd's CNI config: %w", err)
	}
	if err := harness.WriteOfflineHosts(hosts); err != nil {
		return fmt.Errorf("containerd's registry hosts: %w", err)
	}
	if err := c.WriteConfig(c.work, harness.ContainerdSettings{CNIConfDir: confDir, HostsDir: hosts}); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	archive := filepath.Join(c.work, "images.tar")
	busybox := testimage.Options{Name: ref, Cmd: []string{"sh"}}
	if err := harness.WriteContainerdImages(archive, filepath.Join(c.e.binDir, "berth-pause"), busybox); err != nil {
		return fmt.Errorf("containerd images: %w", err)
	}
	if err := c.Launch(); err != nil {
		return fmt.Errorf("%w\n%s", err, c.LogTail(30))
	}
	if err := c.CheckOffline(); err != nil {
		return err
	}
	if err := c.ImportImages(archive, ref); err != nil {
		return fmt.Errorf("%w\n%s", err, c.LogTail(30))
	}
	return nil
}

// client is the bench's CRI client on containerd's socket, its default
// runtime handler (runc v2 shim, the system's runc).
func (c *benchContainerd) client() criClient {
	return criClient{e: c.e, endpoint: c.Endpoint(), rt: c.RT}
}

// stop removes every pod containerd still holds (none, unless a cycle
// failed) through CRI, stops containerd by its pid, then lists what is
// left of it on the machine (leftovers, each removed) and removes its
// directories.
func (c *benchContainerd) stop() (leftovers []string, err error) {
	var errs []error
	if c.Running() && c.RT != nil {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		if sbs, ctrs, lerr := c.ListAll(ctx); lerr == nil {
			for _, sb := range sbs {
				c.ids[sb.GetId()] = true
			}
			for _, ct := range ctrs {
				c.ids[ct.GetId()] = true
			}
		}
		cancel()
		if rerr := c.client().removeAllPods(context.Background()); rerr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Flavour.Name, rerr))
		}
	}
	if c.Started() {
		if serr := c.Shutdown(); serr != nil {
			errs = append(errs, serr)
		}
	}
	if b, rerr := os.ReadFile(c.LogPath); rerr == nil {
		for _, id := range harness.IDPattern.FindAllString(string(b), -1) {
			c.ids[id] = true
		}
	}
	leftovers = c.removeLeftovers()
	for _, dir := range []string{c.state, c.root} {
		if rerr := os.RemoveAll(dir); rerr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Flavour.Name, rerr))
		}
	}
	harness.RemoveEmptyDirs(c.absentHostDirs)
	return leftovers, errors.Join(errs...)
}

// removeLeftovers lists what containerd should have released once every
// pod is removed and it has stopped, and removes it: its shims and the
// containers' processes (killed by pid), mounts below its directories
// (the containers' root file systems, the sandboxes' /dev/shm and network
// namespaces), the links on its bridge and its iptables rules, host-local
// allocations, cgroups named after its sandboxes and containers, libcni's
// cached results and the shims' sockets; then its bridge.
func (c *benchContainerd) removeLeftovers() []string {
	var found []string
	note := func(kind string, items []string) {
		for _, it := range items {
			found = append(found, c.Flavour.Name+": "+kind+" "+it+" (removed)")
		}
	}
	found = append(found, c.killProcesses()...)
	mounts := harness.MountsUnder(c.root, c.state)
	note("mount", mounts)
	for _, m := range mounts {
		_ = unix.Unmount(m, unix.MNT_DETACH) // best effort; the directories' removal tells
	}
	note("link on bridge "+c.net.Bridge+":", c.net.VethsOnBridge())
	note("iptables rule", c.net.IptablesRules())
	note("host-local allocation", c.net.Allocations())
	c.net.RemoveLinks()
	if err := c.net.RemoveIptablesRules(); err != nil {
		found = append(found, c.Flavour.Name+": "+err.Error())
	}
	cgroups := harness.CgroupsNamed(func(name string) bool { return c.ids[name] })
	note("cgroup", cgroups)
	for _, cg := range cgroups {
		harness.RemoveCgroupTree(cg)
	}
	files := append(harness.ContainerdCNIResults(c.net.Name, c.ids), c.ShimSockets(c.ids)...)
	note("file", files)
	for _, f := range files {
		_ = os.Remove(f) // best effort
	}
	return found
}

// killProcesses SIGKILLs, by pid, the processes of this run's containerd:
// those whose command line names its directories (its shims: -address
// <socket>), those in a cgroup named after a sandbox or container it ran,
// and their descendants; it waits for them to be gone, briefly.
func (c *benchContainerd) killProcesses() []string {
	var found []string
	seen := map[int]bool{}
	for range 10 {
		procs := harness.ProcessTree(func(pid int, cmdline string) bool {
			return strings.Contains(cmdline, c.state+"/") || strings.Contains(cmdline, c.root+"/") || harness.InCgroupOf(pid, c.ids)
		})
		if len(procs) == 0 {
			break
		}
		for _, p := range procs {
			if !seen[p.PID] {
				seen[p.PID] = true
				found = append(found, fmt.Sprintf("%s: process %d: %s (killed)", c.Flavour.Name, p.PID, p.Cmdline))
			}
			_ = syscall.Kill(p.PID, syscall.SIGKILL) // a process of this run's containerd
		}
		time.Sleep(200 * time.Millisecond)
	}
	return found
}

// stopContainerd stops c (benchContainerd.stop), keeps its leftovers for
// the report and forgets it: the cleanup has nothing more to do for it.
func (b *bench) stopContainerd(c *benchContainerd) error {
	b.ctrds = slices.DeleteFunc(b.ctrds, func(x *benchContainerd) bool { return x == c })
	leftovers, err := c.stop()
	b.res.leftovers = append(b.res.leftovers, leftovers...)
	return err
}
