package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/network"
)

// cleanup removes everything the run created, in reverse order of creation:
// the containerds of a phase that failed midway (their pods through CRI,
// containerd, then whatever it left), berth's pods through CRI (restarting
// the daemon for it if it died), the daemon,
// the floors' runc containers, then anything still found (reported as a
// leftover and removed), the bridge and the directories. It keeps going
// after errors and returns them all.
func (b *bench) cleanup() (leftovers []string, err error) {
	progressf("cleanup")
	var errs []error
	ctx := context.Background()
	for _, c := range b.ctrds {
		found, cerr := c.stop()
		leftovers = append(leftovers, found...)
		if cerr != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", cerr))
		}
	}
	b.ctrds = nil
	if b.d != nil {
		if !b.d.running() {
			warnf("berth serve exited early; restarting it to remove the pods")
			if d, serr := startDaemon(ctx, b.e); serr == nil {
				b.d = d
			} else {
				errs = append(errs, serr)
			}
		}
		if b.d.running() {
			if rerr := b.d.removeAllPods(ctx); rerr != nil {
				errs = append(errs, fmt.Errorf("cleanup: %w", rerr))
			}
		}
		b.d.stop()
	}
	b.e.deleteRuncLeftovers()
	leftovers = append(leftovers, b.e.killStrayProcesses()...)
	leftovers = append(leftovers, b.e.removeNetworkLeftovers()...)
	leftovers = append(leftovers, b.e.unmountLeftovers()...)
	for _, dir := range []string{b.e.state, b.e.root} {
		if rerr := os.RemoveAll(dir); rerr != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", rerr))
		}
	}
	for _, l := range leftovers {
		warnf("leftover: %s", l)
	}
	return leftovers, errors.Join(errs...)
}

// killStrayProcesses SIGKILLs processes whose command line names this run's
// state or root dir (monitors and pause processes of pods the daemon failed
// to remove): only processes of this run match.
func (e *env) killStrayProcesses() []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		var pid int
		if _, err := fmt.Sscanf(ent.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(raw), "\x00", " ")
		if strings.Contains(cmdline, e.state+"/") || strings.Contains(cmdline, e.root+"/") {
			found = append(found, fmt.Sprintf("process %d: %s (killed)", pid, strings.TrimSpace(cmdline)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return found
}

// removeNetworkLeftovers deletes veths still on the bridge and iptables
// rules naming the subnet, reporting them, then deletes the bridge.
func (e *env) removeNetworkLeftovers() []string {
	var found []string
	if out, err := exec.Command("ip", "-o", "link", "show", "master", e.bridge).Output(); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			found = append(found, "veth "+name+" on bridge "+e.bridge+" (deleted)")
			_ = exec.Command("ip", "link", "del", name).Run()
		}
	}
	found = append(found, e.removeIptablesRules()...)
	if err := exec.Command("ip", "link", "show", e.bridge).Run(); err == nil {
		if out, err := exec.Command("ip", "link", "del", e.bridge).CombinedOutput(); err != nil {
			found = append(found, fmt.Sprintf("bridge %s: ip link del: %v: %s", e.bridge, err, out))
		}
	}
	// The default network's node-wide masquerade is meant to outlive the
	// daemon (its pods may): the bench's network goes with the bench, and
	// is not a leftover.
	if err := network.RemoveMasquerade(context.Background(), e.netName); err != nil {
		found = append(found, err.Error())
	}
	return found
}

// removeIptablesRules deletes nat and filter rules that mention the subnet,
// and the per-pod CNI chains they jump to.
func (e *env) removeIptablesRules() []string {
	var found []string
	prefix := e.subnetPrefix()
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			continue
		}
		var script strings.Builder
		var chains []string
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "-A ") || !mentionsPrefix(line, prefix) {
				continue
			}
			found = append(found, "iptables "+table+": "+line+" (deleted)")
			script.WriteString("-D " + strings.TrimPrefix(line, "-A ") + "\n")
			if i := strings.Index(line, "-j CNI-"); i >= 0 {
				chains = append(chains, strings.Fields(line[i+3:])[0])
			}
		}
		if script.Len() == 0 {
			continue
		}
		for _, c := range chains {
			script.WriteString("-F " + c + "\n-X " + c + "\n")
		}
		cmd := exec.Command("iptables-restore", "--noflush")
		cmd.Stdin = strings.NewReader("*" + table + "\n" + script.String() + "COMMIT\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			found = append(found, fmt.Sprintf("iptables %s: restore: %v: %s", table, err, out))
		}
	}
	return found
}

// mentionsPrefix reports whether line holds an address starting with
// prefix (e.g. "10.120.7."), not merely a longer number ending in it.
func mentionsPrefix(line, prefix string) bool {
	for i := strings.Index(line, prefix); i >= 0; {
		if i == 0 || !strings.ContainsRune("0123456789", rune(line[i-1])) {
			return true
		}
		next := strings.Index(line[i+1:], prefix)
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// unmountLeftovers detaches mounts under the run's directories, deepest
// first.
func (e *env) unmountLeftovers() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := fields[4]
		if strings.HasPrefix(mp, e.state+"/") || strings.HasPrefix(mp, e.root+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	var found []string
	for _, mp := range mounts {
		found = append(found, "mount "+mp+" (detached)")
		_ = unix.Unmount(mp, unix.MNT_DETACH)
	}
	return found
}
