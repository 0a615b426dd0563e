package podcopy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fixture is a fake container root beside a host directory that nothing
// may reach from inside the root.
type fixture struct {
	root, host, out string
	r, h            *Root
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{root: filepath.Join(base, "root"), host: filepath.Join(base, "host"), out: filepath.Join(base, "out")}
	for _, d := range []string{f.root + "/etc", f.root + "/data/sub", f.host, f.out} {
		must(t, os.MkdirAll(d, 0o755))
	}
	write(t, f.root+"/etc/hostname", "inside\n", 0o644)
	write(t, f.host+"/secret", "host secret\n", 0o600)
	write(t, f.root+"/data/a", "a\n", 0o640)
	write(t, f.root+"/data/sub/b", "b\n", 0o4755)
	must(t, os.Chmod(f.root+"/data/sub", 0o750))
	must(t, os.Symlink("/etc", f.root+"/etclink"))                   // absolute: stays inside
	must(t, os.Symlink("../../../../../../host", f.root+"/up"))      // climbs: stays inside
	must(t, os.Symlink(f.host+"/secret", f.root+"/data/hostsecret")) // absolute host path
	must(t, os.Symlink("/proc/self/root/etc", f.root+"/magic"))      // a magic link
	var err error
	if f.r, err = OpenRoot(f.root, "container app of pod default/web"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.r.Close() })
	if f.h, err = OpenRoot("/", "host"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.h.Close() })
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(content), mode))
	must(t, os.Chmod(path, mode))
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Paths in the container resolve beneath its root: "..", absolute
// symlinks and climbing symlinks never reach the host.
func TestCopyOutResolvesBeneathTheRoot(t *testing.T) {
	f := newFixture(t)
	for _, src := range []string{"../../../../etc/hostname", "/etclink/hostname", "etc/../../../etc/hostname"} {
		dst := filepath.Join(f.out, "hostname")
		must(t, Copy(f.r, src, f.h, dst, Options{Perm: 0o777}))
		if got := read(t, dst); got != "inside\n" {
			t.Errorf("copy of %s: %q; want the root's /etc/hostname", src, got)
		}
		must(t, os.Remove(dst))
	}
	if err := Copy(f.r, "/up/secret", f.h, filepath.Join(f.out, "s"), Options{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("copy of /up/secret: err = %v; want not found (the symlink resolves inside the root)", err)
	}
	if err := Copy(f.r, "/magic/hostname", f.h, filepath.Join(f.out, "m"), Options{}); err == nil || !strings.Contains(err.Error(), "resolve") {
		t.Errorf("copy through a /proc magic link: err = %v; want it refused", err)
	}
}

// A directory comes out whole, symlinks as symlinks (never followed),
// modes kept without set-id bits.
func TestCopyOutDirectory(t *testing.T) {
	f := newFixture(t)
	dst := filepath.Join(f.out, "data")
	must(t, Copy(f.r, "/data", f.h, dst, Options{Perm: 0o777}))
	if read(t, dst+"/a") != "a\n" || read(t, dst+"/sub/b") != "b\n" {
		t.Errorf("contents differ")
	}
	for p, want := range map[string]os.FileMode{"a": 0o640, "sub": 0o750 | os.ModeDir, "sub/b": 0o755} {
		if fi, err := os.Lstat(filepath.Join(dst, p)); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v); want %v", p, fi.Mode(), err, want)
		}
	}
	if target, err := os.Readlink(dst + "/hostsecret"); err != nil || target != f.host+"/secret" {
		t.Errorf("symlink hostsecret: %q, %v; want the same target, as a symlink", target, err)
	}
}

// Copies into the container stay inside it: a symlink at the destination
// is replaced, never written through; a path with ".." stays beneath.
func TestCopyInStaysInside(t *testing.T) {
	f := newFixture(t)
	local := filepath.Join(f.out, "payload")
	write(t, local, "payload\n", 0o644)
	must(t, Copy(f.h, local, f.r, "/data/hostsecret", Options{Owner: OwnerRoot}))
	if fi, err := os.Lstat(f.root + "/data/hostsecret"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the symlink at the destination was not replaced by a file: %v %v", fi, err)
	}
	if read(t, f.host+"/secret") != "host secret\n" {
		t.Errorf("the host file behind the symlink was written")
	}
	must(t, Copy(f.h, local, f.r, "../../../up", Options{}))
	if entries, _ := os.ReadDir(f.host); len(entries) != 1 {
		t.Errorf("the host directory gained files: %v", entries)
	}
	// A directory as destination: the file lands inside under its name.
	must(t, Copy(f.h, local, f.r, "/etclink", Options{}))
	if read(t, f.root+"/etc/payload") != "payload\n" {
		t.Errorf("copy into /etclink (-> /etc) did not land in the root's /etc")
	}
}

// Devices, FIFOs and sockets are refused, naming the path.
func TestCopyRefusesSpecialFiles(t *testing.T) {
	f := newFixture(t)
	must(t, unix.Mkfifo(f.root+"/data/fifo", 0o644))
	err := Copy(f.r, "/data/fifo", f.h, filepath.Join(f.out, "fifo"), Options{})
	if err == nil || !strings.Contains(err.Error(), "/data/fifo: a FIFO: refused") || !strings.Contains(err.Error(), "container app of pod default/web") {
		t.Errorf("err = %v; want a FIFO refused, naming the container and the path", err)
	}
	if err := Copy(f.r, "/", f.h, f.out, Options{}); err == nil {
		t.Errorf("copying the root itself: want an error")
	}
}

// Ownership into a user-namespaced container goes through its id map.
func TestCopyInOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	f := newFixture(t)
	local := filepath.Join(f.out, "owned")
	write(t, local, "x", 0o600)
	must(t, os.Chown(local, 1000, 1001))
	f.r.uids, f.r.gids = idMap{{inside: 0, outside: 100000, count: 65536}}, idMap{{inside: 0, outside: 200000, count: 65536}}
	for _, tc := range []struct {
		owner    Owner
		uid, gid uint32
	}{{OwnerPreserve, 101000, 201001}, {OwnerRoot, 100000, 200000}} {
		must(t, Copy(f.h, local, f.r, "/owned", Options{Owner: tc.owner}))
		fi, err := os.Lstat(f.root + "/owned")
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != tc.uid || st.Gid != tc.gid {
			t.Errorf("owner %d: %d:%d; want %d:%d", tc.owner, st.Uid, st.Gid, tc.uid, tc.gid)
		}
	}
	f.r.uids = idMap{{inside: 0, outside: 100000, count: 10}}
	if err := Copy(f.h, local, f.r, "/owned", Options{Owner: OwnerPreserve}); err == nil || !strings.Contains(err.Error(), "no id on the host") {
		t.Errorf("unmapped uid: err = %v; want refused", err)
	}
}

func TestParseIDMap(t *testing.T) {
	m, err := parseIDMap([]byte("         0          0 4294967295\n"), "uid_map")
	if err != nil || m != nil {
		t.Errorf("identity map: %v, %v; want nil", m, err)
	}
	m, err = parseIDMap([]byte("0 100000 65536\n"), "uid_map")
	if id, ok := m.toHost(5); err != nil || !ok || id != 100005 {
		t.Errorf("map 0 100000 65536: 5 -> %d %v (%v); want 100005", id, ok, err)
	}
	if _, ok := m.toHost(70000); ok {
		t.Errorf("70000 is outside the map")
	}
	if _, err := parseIDMap([]byte("0 1\n"), "uid_map"); err == nil {
		t.Errorf("a short line: want an error")
	}
}
