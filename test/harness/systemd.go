package harness

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SystemdBinary is where Debian installs systemd.
const SystemdBinary = "/lib/systemd/systemd"

// PrivateSystemd is a systemd of a test's own, for hosts where systemd is
// not PID 1 (or should not be touched): it is PID 1 of new PID, mount,
// cgroup and UTS namespaces, with a private /run, and sees as the root of
// every cgroup hierarchy a cgroup made for it (the host's v1 hierarchies
// and the hybrid layout's cgroup2 remounted inside its cgroup namespace).
// Its units live in that subtree only; killing it ends its namespaces.
type PrivateSystemd struct {
	PID int // systemd, in the host's PID namespace
	// Enter runs a program (appended) as a child in systemd's namespaces
	// and cgroup root, passing SIGTERM and SIGINT on (Options.Wrap).
	Enter []string
	// Roots are the host paths of systemd's cgroup root, by hierarchy
	// (the mount point's base name: "memory", "cpu", "unified", ...).
	Roots map[string]string
}

// hierarchy is one mounted cgroup hierarchy of the host.
type hierarchy struct {
	name    string   // base name of the mount point
	v2      bool     // cgroup2 (the hybrid layout's unified mount)
	options []string // v1: the controllers and name= options to mount it by
	root    string   // host path of the private systemd's cgroup root
}

// StartPrivateSystemd starts one and registers its removal (systemd killed
// by PID, which ends its namespaces and mounts, then its cgroups removed),
// or skips the test saying why it cannot run here.
func StartPrivateSystemd(t *testing.T) *PrivateSystemd {
	t.Helper()
	if reason := privateSystemdMissing(); reason != "" {
		t.Skip("private systemd: " + reason)
	}
	dir := t.TempDir()
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Skip("private systemd: " + err.Error())
	}
	name := "berth-systemd-" + RandomHex(6)
	var procs []string
	for i := range hs {
		if err := makeRootCgroup(&hs[i], name); err != nil {
			removeRoots(hs)
			t.Fatalf("private systemd: %v", err)
		}
		procs = append(procs, filepath.Join(hs[i].root, "cgroup.procs"))
	}
	t.Cleanup(func() { // runs after the kill below
		for _, left := range removeRoots(hs) {
			t.Errorf("private systemd: cgroup %s left after its removal", left)
		}
	})
	sd, err := launchSystemd(t, dir, hs, procs)
	if err != nil {
		t.Skipf("private systemd did not come up: %v\n%s", err, readTail(filepath.Join(dir, "systemd.log")))
	}
	return sd
}

func privateSystemdMissing() string {
	if os.Geteuid() != 0 {
		return "needs root"
	}
	if _, err := os.Stat(SystemdBinary); err != nil {
		return "systemd is not installed: " + err.Error()
	}
	for _, tool := range []string{"unshare", "nsenter", "pkill", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is missing"
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil || st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "/sys/fs/cgroup is cgroup v2 only; this helper remounts the v1 (or hybrid) layout"
	}
	return ""
}

// cgroupHierarchies lists the cgroup mounts under /sys/fs/cgroup.
func cgroupHierarchies() ([]hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hs []hierarchy
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 3 || filepath.Dir(fields[4]) != "/sys/fs/cgroup" {
			continue
		}
		h := hierarchy{name: filepath.Base(fields[4]), v2: after[0] == "cgroup2"}
		if after[0] != "cgroup" && !h.v2 {
			continue
		}
		for _, opt := range strings.Split(after[2], ",") {
			if opt != "rw" && opt != "ro" && !strings.HasPrefix(opt, "release_agent=") {
				h.options = append(h.options, opt)
			}
		}
		hs = append(hs, h)
	}
	if !slices.ContainsFunc(hs, func(h hierarchy) bool { return slices.Contains(h.options, "memory") }) {
		return nil, fmt.Errorf("no cgroup v1 memory hierarchy under /sys/fs/cgroup")
	}
	return hs, sc.Err()
}

// makeRootCgroup makes name in this process's cgroup of h (cpuset's
// cpus and mems copied, or nothing could join it).
func makeRootCgroup(h *hierarchy, name string) error {
	own, err := ownCgroup(*h)
	if err != nil {
		return err
	}
	parent := filepath.Join("/sys/fs/cgroup", h.name, own)
	h.root = filepath.Join(parent, name)
	if err := os.Mkdir(h.root, 0o755); err != nil {
		return err
	}
	for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
		if data, err := os.ReadFile(filepath.Join(parent, file)); err == nil {
			if err := os.WriteFile(filepath.Join(h.root, file), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownCgroup is this process's cgroup in h, from /proc/self/cgroup.
func ownCgroup(h hierarchy) (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if h.v2 && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		if !h.v2 && parts[1] != "" && slices.ContainsFunc(strings.Split(parts[1], ","), func(c string) bool {
			return slices.Contains(h.options, c)
		}) {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("cgroup hierarchy %s: this process's cgroup not found", h.name)
}

// removeRoots removes systemd's cgroup roots and lists those left.
func removeRoots(hs []hierarchy) []string {
	var left []string
	for _, h := range hs {
		if h.root == "" {
			continue
		}
		deadline := time.Now().Add(10 * time.Second)
		for RemoveCgroupTree(h.root); time.Now().Before(deadline); RemoveCgroupTree(h.root) {
			if _, err := os.Stat(h.root); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond) // the killed processes leave their cgroups
		}
		if _, err := os.Stat(h.root); err == nil {
			left = append(left, h.root)
		}
	}
	return left
}

func readTail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// launchSystemd writes the scripts, starts unshare and waits for systemd
// to answer on its private socket; its cleanup kills systemd by PID.
func launchSystemd(t *testing.T, dir string, hs []hierarchy, procs []string) (*PrivateSystemd, error) {
	for file, content := range map[string]string{
		"outer.sh": outerScript(procs, filepath.Join(dir, "inner.sh")),
		"inner.sh": innerScript(hs),
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o700); err != nil {
			return nil, err
		}
	}
	logFile, err := os.Create(filepath.Join(dir, "systemd.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(dir, "outer.sh"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sd := &PrivateSystemd{Roots: map[string]string{}}
	t.Cleanup(func() {
		if sd.PID > 0 {
			_ = syscall.Kill(sd.PID, syscall.SIGKILL) // systemd of this test, by PID
		}
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // unshare of this test, by PID
		_ = cmd.Wait()                                     // killed
	})
	children := fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)
	waitFor(10*time.Second, func() bool {
		data, _ := os.ReadFile(children)
		sd.PID, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return sd.PID > 0 && isSystemd(sd.PID)
	})
	if sd.PID <= 0 || !isSystemd(sd.PID) {
		return nil, fmt.Errorf("no systemd process under unshare (pid %d)", cmd.Process.Pid)
	}
	socket := fmt.Sprintf("/proc/%d/root/run/systemd/private", sd.PID)
	if !waitFor(30*time.Second, func() bool {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}) {
		return nil, fmt.Errorf("%s does not answer after 30s", socket)
	}
	for _, h := range hs {
		sd.Roots[h.name] = h.root
	}
	enter := filepath.Join(dir, "enter.sh")
	if err := os.WriteFile(enter, []byte(enterScript(procs, sd.PID)), 0o700); err != nil {
		return nil, err
	}
	sd.Enter = []string{enter}
	return sd, nil
}

func isSystemd(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && filepath.Base(exe) == "systemd"
}

// Systemctl runs systemctl in the private systemd's namespaces.
func (s *PrivateSystemd) Systemctl(args ...string) (string, error) {
	argv := append([]string{"--target", strconv.Itoa(s.PID), "--mount", "--pid", "--cgroup", "--uts", "--", "systemctl"}, args...)
	out, err := exec.Command("nsenter", argv...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Serve sets o up to run `berth serve` inside this systemd: through Enter,
// with its state directory below a short temporary directory (systemd's
// /run is its own; the test reaches the socket there) and o.Config copied
// with cgroup_driver = "systemd" in front.
func (s *PrivateSystemd) Serve(t *testing.T, o *Options) {
	t.Helper()
	stateParent, err := os.MkdirTemp("", "bsd") // short: socket paths below it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateParent) })
	base, err := os.ReadFile(o.Config)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, append([]byte("cgroup_driver = \"systemd\"\n"), base...), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Config, o.StateParent, o.Wrap = config, stateParent, s.Enter
}
