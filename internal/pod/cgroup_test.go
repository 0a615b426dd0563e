package pod

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/oci"
)

// cgroupDirs makes rel under each named hierarchy of s's cgroup root.
func cgroupDirs(t *testing.T, s *Service, rel string, hierarchies ...string) []string {
	t.Helper()
	var dirs []string
	for _, h := range hierarchies {
		d := filepath.Join(s.cgroupRoot, h, rel)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// runc delete exits 0 when its cgroup rmdir keeps failing: berth removes
// what it left, in every hierarchy, and nothing beside it.
func TestRuncDeleteRemovesTheCgroupRuncLeftBehind(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	path := oci.CgroupsPath("", "c1")
	left := cgroupDirs(t, s, path, "memory", "freezer", "systemd")
	sibling := cgroupDirs(t, s, oci.CgroupsPath("", "c2"), "memory")[0]
	if err := s.runcDelete(context.Background(), s.runtime, "c1", path); err != nil {
		t.Fatal(err)
	}
	for _, d := range left {
		if exists(t, d) {
			t.Errorf("%s is still there", d)
		}
	}
	if !exists(t, sibling) {
		t.Errorf("another container's cgroup %s was removed", sibling)
	}
}

// A task still exiting keeps the directory busy for a while: berth retries
// until it is gone.
func TestLeftoverCgroupIsRemovedOnceItsLastTaskIsGone(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	path := oci.CgroupsPath("", "c1")
	dir := cgroupDirs(t, s, path, "memory")[0]
	busy := filepath.Join(dir, "busy") // rmdir of dir fails while it exists
	if err := os.Mkdir(busy, 0o700); err != nil {
		t.Fatal(err)
	}
	f.hook["delete"] = func(string) {
		go func() {
			time.Sleep(50 * time.Millisecond) // the task's exit, after runc gave up
			_ = os.Remove(busy)
		}()
	}
	if err := s.runcDelete(context.Background(), s.runtime, "c1", path); err != nil {
		t.Fatal(err)
	}
	if exists(t, dir) {
		t.Errorf("%s is still there after its last task left", dir)
	}
}

// What stays busy is never forced: it is kept and reported.
func TestBusyCgroupIsReportedNotForced(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	var logs bytes.Buffer
	s.log = slog.New(slog.NewTextHandler(&logs, nil))
	s.cgroupRemoveWait = 30 * time.Millisecond
	path := oci.CgroupsPath("", "c1")
	dir := cgroupDirs(t, s, path, "memory")[0]
	child := cgroupDirs(t, s, filepath.Join(path, "child"), "memory")[0]
	if err := s.runcDelete(context.Background(), s.runtime, "c1", path); err != nil {
		t.Fatal(err)
	}
	if !exists(t, child) {
		t.Fatalf("the busy cgroup's child %s was removed", child)
	}
	if !strings.Contains(logs.String(), "cgroup left behind") || !strings.Contains(logs.String(), dir) {
		t.Errorf("no warning naming %s: %q", dir, logs.String())
	}
}

// Under the systemd driver the scope is systemd's: berth removes nothing.
func TestSystemdScopeIsLeftToSystemd(t *testing.T) {
	f := newFakeWorld()
	s := newFakeService(t, t.TempDir(), t.TempDir(), f)
	dir := cgroupDirs(t, s, "system.slice/berth-c1.scope", "memory")[0]
	if err := s.runcDelete(context.Background(), s.runtime, "c1", "system.slice:berth:c1"); err != nil {
		t.Fatal(err)
	}
	if !exists(t, dir) {
		t.Errorf("%s was removed", dir)
	}
}

// berth-pause's cgroupsPath comes from its bundle's spec.
func TestBundleCgroupsPath(t *testing.T) {
	bundle := t.TempDir()
	if got := bundleCgroupsPath(bundle); got != "" {
		t.Errorf("no spec: %q, want empty", got)
	}
	writeFile(t, filepath.Join(bundle, "config.json"), `{"linux":{"cgroupsPath":"/berth/p1"}}`)
	if got := bundleCgroupsPath(bundle); got != "/berth/p1" {
		t.Errorf("cgroupsPath %q, want /berth/p1", got)
	}
}
