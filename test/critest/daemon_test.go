package critest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/test/harness"
)

// daemon is the berth serve critest talks to, with its own directories,
// bridge and subnet.
type daemon struct {
	bin, root, state, socket, config, logPath string
	bridge, subnet, network                   string
	cmd                                       *exec.Cmd
	exited                                    chan struct{}
}

func newDaemon(t *testing.T, tmp, bin, hostsDir string) *daemon {
	t.Helper()
	id := randomHex(3)
	d := &daemon{
		bin: bin, root: "/var/lib/bt-crit-" + id, state: "/run/bt-crit-" + id,
		logPath: filepath.Join(tmp, "berth.log"), bridge: "bcrit" + id, network: "critest-" + id,
		subnet: fmt.Sprintf("10.%d.%d.0/24", 200+rand.IntN(50), rand.IntN(256)),
	}
	d.socket = filepath.Join(d.state, "berth.sock")
	d.config = filepath.Join(tmp, "config.toml")
	config := fmt.Sprintf(`root_dir = %q
state_dir = %q
log_level = "debug"

[cni]
conf_dir = %q
bin_dirs = ["/usr/lib/cni"]
default_network = %q
default_bridge = %q
default_subnet = %q

[registry]
hosts_dir = %q
`, d.root, d.state, mkdir(t, tmp, "net.d"), d.network, d.bridge, d.subnet, hostsDir)
	if err := os.WriteFile(d.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.forceClean(t) })
	return d
}

func (d *daemon) start(t *testing.T) {
	t.Helper()
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	d.cmd = exec.Command(filepath.Join(d.bin, "berth"), "serve", "--config", d.config)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.exited = make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(d.exited) }() // the exit is seen through exited
	ready := waitFor(30*time.Second, func() bool {
		conn, err := net.Dial("unix", d.socket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	if !ready {
		t.Fatalf("berth serve did not listen on %s in 30s\n%s", d.socket, d.logTail(40))
	}
}

func (d *daemon) stop(t *testing.T) {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM) // our own child
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Errorf("berth serve did not exit 20s after SIGTERM")
		_ = d.cmd.Process.Kill() // our own child
		<-d.exited
	}
	d.cmd = nil
}

func (d *daemon) logTail(n int) string {
	data, _ := os.ReadFile(d.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// assertClean fails the test when critest's pods left anything behind:
// runc containers, mounts, monitor or pause processes, IP allocations or
// iptables rules.
func (d *daemon) assertClean(t *testing.T) {
	t.Helper()
	if out, _ := exec.Command(harness.Runc(), "--root", filepath.Join(d.state, "runc"), "list", "-q").Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("runc containers left: %s", out)
	}
	if mounts := harness.MountsUnder(d.root, d.state); len(mounts) > 0 {
		t.Errorf("mounts left: %s", strings.Join(mounts, "\n"))
	}
	if pids := d.processes(); len(pids) > 0 {
		t.Errorf("berth processes left: %v", pids)
	}
	allocs, _ := filepath.Glob(filepath.Join(d.root, "cni", "networks", "*", "1*"))
	if len(allocs) > 0 {
		t.Errorf("IP allocations left: %v", allocs)
	}
	if out, _ := exec.Command("iptables-save").Output(); strings.Contains(string(out), strings.TrimSuffix(d.subnet, "0/24")) {
		t.Errorf("iptables rules for %s left", d.subnet)
	}
}

// forceClean removes whatever is left, whether or not the test passed.
func (d *daemon) forceClean(t *testing.T) {
	d.stop(t)
	for _, pid := range d.processes() {
		_ = syscall.Kill(pid, syscall.SIGKILL) // best effort
	}
	// Containers outlive their monitors: berth-pause and container
	// processes are found through runc's state, not by executable.
	runcRoot := filepath.Join(d.state, "runc")
	if out, err := exec.Command(harness.Runc(), "--root", runcRoot, "list", "-q").Output(); err == nil {
		for _, id := range strings.Fields(string(out)) {
			_ = exec.Command(harness.Runc(), "--root", runcRoot, "delete", "--force", id).Run() // best effort
		}
	}
	for _, m := range harness.MountsUnder(d.root, d.state) { // deepest first
		_ = syscall.Unmount(m, syscall.MNT_DETACH) // best effort
	}
	_ = exec.Command("ip", "link", "del", d.bridge).Run() // may not exist
	// The default network's node-wide masquerade outlives the daemon (its
	// pods may); the test's network goes with the test.
	if harness.NftTableExists("inet", network.MasqueradeTable(d.network)) {
		if err := harness.RemoveNftTable("inet", network.MasqueradeTable(d.network)); err != nil {
			t.Errorf("remove nftables table %s: %v", network.MasqueradeTable(d.network), err)
		}
	}
	os.RemoveAll(d.state)
	os.RemoveAll(d.root)
}

// processes lists the pids running one of this test's binaries.
func (d *daemon) processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, d.bin+"/") && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}
