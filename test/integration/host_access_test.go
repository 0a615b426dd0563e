package integration

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nobody is the unprivileged host user of these checks.
const nobody = 65534

// planter is a root container that leaves in its writable layer what a
// host user must never reach: a setuid-root busybox and a world-readable
// device node (/dev/zero's numbers here; a disk's would be the attack).
const planter = `mkdir /tmp/suid && cp /bin/busybox /tmp/suid/busybox && chmod 4755 /tmp/suid/busybox &&
mknod /tmp/zero c 1 5 && chmod 666 /tmp/zero && echo planted; exec sleep 3600`

// TestHostUserReachesNothingOfARunningPod runs a pod (with berth-pause, so
// every kind of file berth makes is there) whose container plants a setuid
// binary and a device node, then checks as user nobody that nothing under
// the root and state directories is readable, executable or enterable, and
// that the planted files cannot be used from the host. It checks again
// after the root and state directories were opened up (0755): berth's own
// directories below them must hold on their own.
func TestHostUserReachesNothingOfARunningPod(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "host-access")
	podCfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}
	podID := d.runPod(podCfg)
	cfg := shell("planter", planter)
	cfg.LogPath = "planter/0.log" // kubelet's layout: berth makes the container's log directory
	id := d.run(podID, podCfg, cfg)
	if !eventually(20*time.Second, func() bool { return hasLines(readLog(t, logPath(podCfg, cfg)), "stdout F planted") }) {
		t.Fatalf("the container did not plant its files: %+v", readLog(t, logPath(podCfg, cfg)))
	}
	// A pod in a user namespace too: its root filesystems lie under
	// <state>/userns/<pod>, which only its ids may enter.
	usernsCfg := usernsPod(t, "host-access-userns", usernsMapping(9<<16))
	usernsID := d.runPod(usernsCfg)
	d.run(usernsID, usernsCfg, inUserns(usernsCfg, shell("planter", planter)))
	for dir, want := range map[string]fs.FileMode{
		d.Root: 0o700, filepath.Dir(logPath(podCfg, cfg)): 0o700,
		// Traversal only, for the pods in user namespaces (docs/architecture.md, Files).
		d.State: 0o711, filepath.Join(d.State, "userns"): 0o711, filepath.Join(d.State, "userns", usernsID): 0o710,
	} {
		if mode := modeOf(t, dir); mode != want {
			t.Errorf("%s: mode %o, want %o", dir, mode, want)
		}
	}
	planted := []string{
		filepath.Join(d.State, "bundles", id, "rootfs", "tmp", "suid", "busybox"),
		filepath.Join(d.Root, "containers", id, "upper", "tmp", "suid", "busybox"),
		filepath.Join(d.State, "bundles", id, "rootfs", "tmp", "zero"),
		filepath.Join(d.Root, "containers", id, "upper", "tmp", "zero"),
	}
	for _, p := range planted {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("planted file: %v", err)
		}
	}
	t.Run("as-created", func(t *testing.T) { checkUnreachable(t, d, planted) })
	t.Run("parents-opened", func(t *testing.T) {
		for _, dir := range []string{d.Root, d.State} {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			mode := modeOf(t, dir)
			t.Cleanup(func() { _ = os.Chmod(dir, mode) }) // back to berth's mode once the subtest ends
		}
		checkUnreachable(t, d, planted)
	})
	d.stopAndRemovePod(podID)
	d.stopAndRemovePod(usernsID)
}

// checkUnreachable asserts that user nobody can read, execute or enter
// nothing below the daemon's root and state directories (symlinks aside:
// they are followed by name, so only their targets count), cannot run the
// planted setuid binaries and cannot open the planted devices.
func checkUnreachable(t *testing.T, d *daemon, planted []string) {
	t.Helper()
	var paths []string
	for _, top := range []string{d.Root, d.State} {
		err := filepath.WalkDir(top, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != top && e.Type()&fs.ModeSymlink == 0 {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", top, err)
		}
	}
	if len(paths) < 100 {
		t.Fatalf("only %d paths under the root and state directories: the pod's files are missing", len(paths))
	}
	// test(1) checks with the caller's ids: it answers for nobody. The one
	// directory nobody may enter, not list, is <state>/userns (0711).
	out := asNobodyArgs(t, strings.Join(paths, "\n")+"\n",
		`while IFS= read -r p; do if [ -r "$p" ] || { [ -x "$p" ] && [ "$p" != "$0" ]; }; then echo "$p"; fi; done`,
		filepath.Join(d.State, "userns"))
	if out != "" {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		t.Errorf("user nobody can read or execute %d of %d paths, e.g.:\n%s", len(lines), len(paths), strings.Join(lines[:min(len(lines), 20)], "\n"))
	}
	for _, p := range planted {
		script := `"$0" true 2>&1; echo "exit=$?"`
		if strings.HasSuffix(p, "zero") {
			script = `head -c1 "$0" 2>&1 >/dev/null; echo "exit=$?"`
		}
		out := asNobodyArgs(t, "", script, p)
		if !strings.Contains(out, "Permission denied") || strings.Contains(out, "exit=0") {
			t.Errorf("user nobody used %s: %q", p, out)
		}
	}
}

// asNobodyArgs runs sh -c script (with args as $0...) as user nobody.
func asNobodyArgs(t *testing.T, stdin, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script}, args...)...)
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh as nobody: %v\n%s", err, out)
	}
	return string(out)
}

func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}
