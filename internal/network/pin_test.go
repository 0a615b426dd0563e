package network

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// mountsUnder lists the mount points in this process's mount table under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	return out
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestPinUnpin(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "ns")
	t.Cleanup(func() { _ = Unpin(dir) })
	hostname := "pod-" + randomHex(t, 4)

	ns, err := Pin(PinOptions{Dir: dir, Net: true, IPC: true, UTS: true, Hostname: hostname})
	if err != nil {
		t.Fatal(err)
	}
	for kind, p := range map[string]string{"net": ns.Net, "ipc": ns.IPC, "uts": ns.UTS} {
		if p != filepath.Join(dir, kind) {
			t.Errorf("%s pin at %q, want %q", kind, p, filepath.Join(dir, kind))
		}
		if !IsPinned(p) {
			t.Errorf("%s pin %s is not an nsfs mount", kind, p)
		}
		if inode(t, p) == inode(t, "/proc/self/ns/"+kind) {
			t.Errorf("%s pin is the host's own namespace", kind)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("pin dir mode: %v, %v", st.Mode().Perm(), err)
	}

	out, err := exec.Command("nsenter", "--uts="+ns.UTS, "/bin/busybox", "hostname").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != hostname {
		t.Errorf("hostname in the pod's UTS namespace = %q (%v), want %q", out, err, hostname)
	}
	if host, _ := os.Hostname(); host == hostname {
		t.Errorf("the host's hostname changed to %q", host)
	}
	out, err = exec.Command("nsenter", "--net="+ns.Net, "/bin/busybox", "ip", "-o", "link").CombinedOutput()
	if err != nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), "lo:") {
		t.Errorf("links in the new netns: %q (%v), want only lo", out, err)
	}

	if err := Unpin(dir); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dir); len(m) != 0 {
		t.Errorf("mounts left after Unpin: %v", m)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pin dir still there after Unpin: %v", err)
	}
	if err := Unpin(dir); err != nil {
		t.Errorf("second Unpin: %v", err)
	}
	if IsPinned(ns.Net) {
		t.Error("IsPinned true after Unpin")
	}
}

func TestPinOnlyNet(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "ns")
	t.Cleanup(func() { _ = Unpin(dir) })
	ns, err := Pin(PinOptions{Dir: dir, Net: true})
	if err != nil {
		t.Fatal(err)
	}
	if ns.IPC != "" || ns.UTS != "" || !IsPinned(ns.Net) {
		t.Errorf("pins = %+v, want net only", ns)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipc")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ipc file exists without being asked: %v", err)
	}
	if err := Unpin(dir); err != nil {
		t.Fatal(err)
	}
}

func TestPinFailureMidwayLeavesNothing(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "ns")
	t.Cleanup(func() { _ = Unpin(dir) })
	afterPinMountHook = func(kind string) error {
		if kind == "ipc" {
			return errors.New("injected failure")
		}
		return nil
	}
	t.Cleanup(func() { afterPinMountHook = nil })

	_, err := Pin(PinOptions{Dir: dir, Net: true, IPC: true, UTS: true, Hostname: "x"})
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("Pin error = %v, want the injected failure", err)
	}
	if m := mountsUnder(t, dir); len(m) != 0 {
		t.Errorf("mounts left after a failed Pin: %v", m)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pin dir left after a failed Pin: %v", err)
	}
}

func TestPinRejectsBadOptions(t *testing.T) {
	tmp := t.TempDir()
	for name, opts := range map[string]PinOptions{
		"relative dir":         {Dir: "ns", Net: true},
		"hostname without uts": {Dir: filepath.Join(tmp, "a"), Net: true, Hostname: "h"},
		"hostname too long":    {Dir: filepath.Join(tmp, "b"), UTS: true, Hostname: strings.Repeat("h", 65)},
		"empty dir":            {Net: true},
	} {
		if _, err := Pin(opts); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want InvalidArgument", name, err)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("rejected Pin left %d entries", len(entries))
	}
}

func TestPinExistingDir(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	if _, err := Pin(PinOptions{Dir: dir, Net: true}); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("err = %v, want AlreadyExists", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("existing dir removed by a refused Pin: %v", err)
	}
}
