package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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
	if !d.Running() && d.cmd != nil {
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
	for _, sb := range list.GetItems() {
		d.KnownIDs[sb.GetId()] = true
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
}

var idPattern = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// CollectIDs remembers every sandbox and container id the daemon ever
// mentioned (its log, its record and state directories, runc), so leftovers
// of half-made objects are found too.
func (d *Daemon) CollectIDs() {
	if b, err := os.ReadFile(d.LogPath); err == nil {
		for _, id := range idPattern.FindAllString(string(b), -1) {
			d.KnownIDs[id] = true
		}
	}
	for _, dir := range []string{
		filepath.Join(d.Root, "sandboxes"), filepath.Join(d.Root, "containers"),
		filepath.Join(d.State, "pods"), filepath.Join(d.State, "bundles"),
	} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if idPattern.MatchString(e.Name()) {
				d.KnownIDs[e.Name()] = true
			}
		}
	}
	for _, id := range d.runcContainers() {
		d.KnownIDs[id] = true
	}
}

// Leftovers lists everything the daemon should have released.
func (d *Daemon) Leftovers() []string {
	var out []string
	for _, m := range d.mountsLeft() {
		out = append(out, "mount "+m)
	}
	for _, p := range d.processesLeft() {
		out = append(out, fmt.Sprintf("process %d: %s", p.pid, p.cmdline))
	}
	for _, id := range d.runcContainers() {
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

// mountsLeft lists mount points under the root or state directory, deepest
// first.
func (d *Daemon) mountsLeft() []string {
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
		if under(mp, d.Root) || under(mp, d.State) {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

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

// processesLeft lists processes that belong to this daemon's pods: monitors
// (their command line names the state dir), processes in a cgroup named
// after a known id (containers, berth-pause), and their descendants.
func (d *Daemon) processesLeft() []proc {
	entries, _ := os.ReadDir("/proc")
	ours := map[int]bool{}
	parents := map[int]int{}
	cmdlines := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || (d.cmd != nil && d.Running() && pid == d.cmd.Process.Pid) {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		cmdlines[pid] = cmdline
		parents[pid] = parentPid(pid)
		if strings.Contains(cmdline, d.State) || d.inKnownCgroup(pid) {
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

// inKnownCgroup reports whether pid lives in a cgroup named after an id
// this daemon used.
func (d *Daemon) inKnownCgroup(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, id := range idPattern.FindAllString(string(b), -1) {
		if d.KnownIDs[id] {
			return true
		}
	}
	return false
}

// runcContainers lists the containers runc still knows under the state dir.
func (d *Daemon) runcContainers() []string {
	root := filepath.Join(d.State, "runc")
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	out, err := exec.Command("runc", "--root", root, "list", "--format", "json").Output()
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
	var out []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/berth")
	if _, err := os.Stat("/sys/fs/cgroup/berth"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/berth")
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error { //nolint:errcheck // best effort
			if err == nil && e.IsDir() && d.knownCgroupName(e.Name()) && !contains(out, p) {
				out = append(out, p)
			}
			return nil
		})
	}
	for id := range d.KnownIDs {
		more, _ := filepath.Glob("/sys/fs/cgroup/*/*/" + id)
		for _, m := range more {
			if !contains(out, m) {
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// forceClean removes whatever the daemon left: processes, runc state,
// mounts, links, iptables rules, cgroups and directories.
func (d *Daemon) forceClean() {
	for i := 0; i < 3; i++ {
		procs := d.processesLeft()
		if len(procs) == 0 {
			break
		}
		for _, p := range procs {
			syscall.Kill(p.pid, syscall.SIGKILL) //nolint:errcheck // it belongs to this test's daemon
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range d.runcContainers() {
		exec.Command("runc", "--root", filepath.Join(d.State, "runc"), "delete", "--force", id).Run() //nolint:errcheck // best effort
	}
	for _, m := range d.mountsLeft() {
		syscall.Unmount(m, syscall.MNT_DETACH) //nolint:errcheck // best effort
	}
	d.Net.RemoveLinks()
	if err := d.Net.RemoveIptablesRules(); err != nil {
		d.T.Logf("force clean: %v", err)
	}
	for _, c := range d.cgroupsLeft() {
		removeCgroupTree(c)
	}
	for _, dir := range []string{d.State, d.Root} {
		if err := os.RemoveAll(dir); err != nil {
			d.T.Logf("force clean: %v", err)
		}
	}
}

// removeCgroupTree removes a cgroup directory and its children, deepest
// first (cgroupfs directories are removed with rmdir only).
func removeCgroupTree(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error { //nolint:errcheck // best effort
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) //nolint:errcheck // best effort
	}
}
