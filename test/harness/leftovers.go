package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Cleanup runs after every test, failed or not: BeforeCleanup, remove every
// sandbox through CRI, stop the daemon, assert that nothing is left, then
// force-remove whatever is, so the machine stays clean.
func (d *Daemon) Cleanup() {
	t := d.T
	if !d.Running() && d.proc.Started() {
		if err := d.Launch(); err != nil {
			t.Errorf("cleanup: restart daemon to remove pods: %v", err)
		}
	}
	if d.BeforeCleanup != nil && d.Running() {
		d.BeforeCleanup()
	}
	if d.Running() && d.RT != nil {
		d.removeAllSandboxes()
	}
	d.CollectIDs()
	d.stopIfRunning()
	for _, problem := range d.Leftovers() {
		t.Errorf("leftover after cleanup: %s", problem)
	}
	if log, err := os.ReadFile(d.LogPath); err == nil && bytes.Contains(log, []byte("WARNING: DATA RACE")) {
		t.Errorf("the daemon reported a data race (log %s)", d.LogPath)
	}
	if t.Failed() {
		t.Logf("daemon log %s:\n%s", d.LogPath, d.LogTail(150))
	}
	d.forceClean()
}

func (d *Daemon) stopIfRunning() {
	if d.Running() {
		d.Stop()
	}
}

// removeAllSandboxes stops and removes every sandbox the daemon lists.
func (d *Daemon) removeAllSandboxes() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		d.T.Errorf("cleanup: ListPodSandbox: %v", err)
		return
	}
	var podCgroups []string
	for _, sb := range list.GetItems() {
		d.KnownIDs[sb.GetId()] = true
		if uid := sb.GetMetadata().GetUid(); uid != "" {
			podCgroups = append(podCgroups, "pod"+uid)
		}
		if _, err := d.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			d.T.Errorf("cleanup: StopPodSandbox %s: %v", sb.GetId(), err)
		}
		if _, err := d.RT.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			d.T.Errorf("cleanup: RemovePodSandbox %s: %v", sb.GetId(), err)
		}
	}
	list, err = d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err == nil && len(list.GetItems()) > 0 {
		d.T.Errorf("cleanup: %d sandboxes still listed after removal", len(list.GetItems()))
	}
	ctrs, err := d.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err == nil && len(ctrs.GetContainers()) > 0 {
		d.T.Errorf("cleanup: %d containers still listed after removing every sandbox", len(ctrs.GetContainers()))
	}
	// The agent removes a pod's own cgroup when it deletes the pod; the
	// sandboxes removed here behind its back leave theirs, so the cleanup
	// removes them (only the ones of these pods, empty ones only).
	for _, dir := range BerthCgroups(func(name string) bool { return slices.Contains(podCgroups, name) }) {
		RemoveCgroupTree(dir)
	}
}

// CollectIDs remembers every sandbox and container id the daemon ever
// mentioned (its log, its record and state directories, runc), so leftovers
// of half-made objects are found too.
func (d *Daemon) CollectIDs() {
	if b, err := os.ReadFile(d.LogPath); err == nil {
		for _, id := range IDPattern.FindAllString(string(b), -1) {
			d.KnownIDs[id] = true
		}
	}
	for _, dir := range []string{
		filepath.Join(d.Root, "sandboxes"), filepath.Join(d.Root, "containers"),
		filepath.Join(d.State, "pods"), filepath.Join(d.State, "bundles"),
	} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if IDPattern.MatchString(e.Name()) {
				d.KnownIDs[e.Name()] = true
			}
		}
	}
	for _, id := range d.RuncContainers() {
		d.KnownIDs[id] = true
	}
}

// Leftovers lists everything the daemon should have released.
func (d *Daemon) Leftovers() []string {
	var out []string
	for _, m := range d.MountsLeft() {
		out = append(out, "mount "+m)
	}
	for _, p := range d.ProcessesLeft() {
		out = append(out, fmt.Sprintf("process %d: %s", p.PID, p.Cmdline))
	}
	for _, id := range d.RuncContainers() {
		out = append(out, "runc container "+id)
	}
	for _, a := range d.Net.Allocations() {
		out = append(out, "host-local allocation "+filepath.Join(d.Net.DataDir, d.Net.Name, a))
	}
	for _, l := range d.Net.VethsOnBridge() {
		out = append(out, "link on bridge "+d.Net.Bridge+": "+l)
	}
	for _, r := range d.Net.IptablesRules() {
		out = append(out, "iptables "+r)
	}
	for _, c := range d.cgroupsLeft() {
		out = append(out, "cgroup "+c)
	}
	return out
}

// MountsLeft lists mount points under the root or state directory, deepest
// first.
func (d *Daemon) MountsLeft() []string { return MountsUnder(d.Root, d.State) }

// ProcessesLeft lists the processes that belong to this daemon's pods:
// monitors (their command line names the state dir), processes in a
// cgroup named after a known id (containers, berth-pause), and their
// descendants. The daemon itself is not among them.
func (d *Daemon) ProcessesLeft() []Proc {
	return ProcessTree(func(pid int, cmdline string) bool {
		return strings.Contains(cmdline, d.State) || InCgroupOf(pid, d.KnownIDs)
	}, d.proc.Pid())
}

// RuncContainers lists the containers runc still knows under the state dir.
func (d *Daemon) RuncContainers() []string {
	root := filepath.Join(d.State, "runc")
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	out, err := exec.Command(Runc(), "--root", root, "list", "--format", "json").Output()
	if err != nil {
		return nil
	}
	var list []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(out, &list) != nil {
		return nil
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// cgroupsLeft lists cgroup directories named after a known id, or after
// a known pod uid (pod<uid>, the agent's pod cgroups), anywhere under a
// hierarchy's berth subtree, and directly in a hierarchy.
func (d *Daemon) cgroupsLeft() []string {
	out := BerthCgroups(d.knownCgroupName)
	for id := range d.KnownIDs {
		more, _ := filepath.Glob("/sys/fs/cgroup/*/*/" + id)
		for _, m := range more {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (d *Daemon) knownCgroupName(name string) bool {
	return d.KnownIDs[name] || (strings.HasPrefix(name, "pod") && d.KnownPodUIDs[strings.TrimPrefix(name, "pod")])
}

// forceClean removes whatever the daemon left: processes, runc state,
// mounts, links, iptables rules, cgroups and directories.
func (d *Daemon) forceClean() {
	d.wipeVolatile(true)
	if err := os.RemoveAll(d.Root); err != nil {
		d.T.Logf("force clean: %v", err)
	}
}

// SimulateReboot does to a daemon's world what a power-off reboot does: the
// daemon, its monitors, berth-pause and the containers die at once (SIGKILL),
// and their mounts, namespaces, links, cgroups and the state directory are
// gone; the root directory (records, host-local leases, libcni's cache,
// upper dirs) stays as it is. The iptables rules stay too, as with saved
// rules restored at boot: the host's clock cannot go back to before a boot,
// so a plugin failing on rules a real reboot removed is tested in
// internal/network (TestTeardownOfAPodFromBeforeTheBoot). Start the daemon
// again after.
func (d *Daemon) SimulateReboot() {
	d.CollectIDs()
	d.Kill9()
	d.wipeVolatile(false)
	// The killed processes went to the host's init, which reaps them in its
	// own time; after a reboot there are none.
	for deadline := time.Now().Add(30 * time.Second); len(d.ProcessesLeft()) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// wipeVolatile removes what does not outlive a reboot: processes, runc
// state, mounts, links, (with rules) iptables rules, cgroups and the state
// directory.
func (d *Daemon) wipeVolatile(rules bool) {
	for i := 0; i < 3; i++ {
		procs := d.ProcessesLeft()
		if len(procs) == 0 {
			break
		}
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGKILL) // it belongs to this test's daemon
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range d.RuncContainers() {
		_ = exec.Command(Runc(), "--root", filepath.Join(d.State, "runc"), "delete", "--force", id).Run() // best effort
	}
	for _, m := range d.MountsLeft() {
		_ = syscall.Unmount(m, syscall.MNT_DETACH) // best effort
	}
	d.Net.RemoveLinks()
	if rules {
		if err := d.Net.RemoveIptablesRules(); err != nil {
			d.T.Logf("force clean: %v", err)
		}
	}
	for _, c := range d.cgroupsLeft() {
		RemoveCgroupTree(c)
	}
	if err := os.RemoveAll(d.State); err != nil {
		d.T.Logf("force clean: %v", err)
	}
}
