package volume

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// inode is a file's identity, to tell what a mount point leads to.
type inode struct{ dev, ino uint64 }

func inodeOf(t *testing.T, path string) inode {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return inode{st.Dev, st.Ino}
}

// mountsAt counts the mounts stacked exactly on path.
func mountsAt(t *testing.T, path string) int {
	t.Helper()
	points, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range points {
		if p == path {
			n++
		}
	}
	return n
}

func TestMountSubPath(t *testing.T) {
	requireRoot(t)
	m := newManager(t)
	vol, outside := subPathFixture(t)
	req := func(index int, sub string) podspec.SubPathMount {
		return podspec.SubPathMount{PodUID: "u-sub", Container: "app", MountIndex: index, Volume: "data", VolumePath: vol, SubPath: sub}
	}
	cases := []struct {
		index int
		sub   string
		want  string
		isDir bool
	}{
		{0, "data", "data", true},
		{1, "to-file-link", "data/deep/f", false},
		{2, "inside-rel/made/here", "data/deep/made/here", true},
	}
	for _, c := range cases {
		point, err := m.MountSubPath(req(c.index, c.sub))
		if err != nil {
			t.Fatalf("%s: %v", c.sub, err)
		}
		if want := m.SubPathMountPoint("u-sub", "data", "app", c.index); point != want {
			t.Errorf("%s: mounted on %s, want %s", c.sub, point, want)
		}
		if got, want := inodeOf(t, point), inodeOf(t, filepath.Join(vol, c.want)); got != want {
			t.Errorf("%s: %s leads to %v, want %s %v", c.sub, point, got, c.want, want)
		}
		if info, err := os.Lstat(point); err != nil || info.IsDir() != c.isDir {
			t.Errorf("%s: mount point %v %v, want a directory: %v", c.sub, info, err, c.isDir)
		}
	}
	if got := modeOf(t, filepath.Join(vol, "data/deep/made")); got != 0o770 {
		t.Errorf("made directory mode %v, want the volume's 0770", got)
	}
	if got := modeOf(t, filepath.Join(m.PodDir("u-sub"), SubPathsDir)); got != 0o750 {
		t.Errorf("%s mode %v, want 0750", SubPathsDir, got)
	}

	// The container restarts: its mount 1 is now a directory, and replaces
	// the file mount instead of stacking on it.
	point, err := m.MountSubPath(req(1, "data/deep"))
	if err != nil {
		t.Fatal(err)
	}
	if inodeOf(t, point) != inodeOf(t, filepath.Join(vol, "data/deep")) || mountsAt(t, point) != 1 {
		t.Errorf("remount: %s is not one mount of data/deep (%d mounts)", point, mountsAt(t, point))
	}
	if _, err := m.MountSubPath(req(1, "data/deep")); err != nil || mountsAt(t, point) != 1 {
		t.Errorf("same mount again: %v, %d mounts on %s", err, mountsAt(t, point), point)
	}

	for _, sub := range []string{"escape-rel", "escape-abs/passwd", "data/sneaky/new", "/etc", "../x"} {
		if p, err := m.MountSubPath(req(3, sub)); err == nil || !strings.Contains(err.Error(), sub) {
			t.Errorf("%s: mounted on %q (%v), want an error naming it", sub, p, err)
		}
	}
	if n := mountsAt(t, m.SubPathMountPoint("u-sub", "data", "app", 3)); n != 0 {
		t.Errorf("a refused subPath left %d mounts", n)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was created outside the volume: %v", entries)
	}

	if err := m.Teardown("u-sub"); err != nil {
		t.Fatal(err)
	}
	assertNoMountsUnder(t, m.Root)
	if _, err := os.Lstat(m.PodDir("u-sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod dir left after teardown: %v", err)
	}
	if _, err := os.Stat(filepath.Join(vol, "data/deep/f")); err != nil {
		t.Errorf("teardown reached into the volume: %v", err)
	}
}

func TestMountSubPathRefusesBadNames(t *testing.T) {
	m := &Manager{Root: t.TempDir()}
	vol, _ := subPathFixture(t)
	bad := []podspec.SubPathMount{
		{PodUID: "../u", Container: "app", Volume: "data"},
		{PodUID: "u", Container: "a/b", Volume: "data"},
		{PodUID: "u", Container: "app", Volume: ".."},
		{PodUID: "u", Container: "app", Volume: "data", MountIndex: -1},
	}
	for _, req := range bad {
		req.VolumePath, req.SubPath = vol, "data"
		if p, err := m.MountSubPath(req); err == nil {
			t.Errorf("%+v: mounted on %s", req, p)
		}
	}
}
