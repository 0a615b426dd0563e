package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-dev/berth/internal/cgrouppath"
	"github.com/berth-dev/berth/internal/oci"
)

// removeEmptyDefaultCgroup removes berth's default cgroupfs parent (the
// home of pods that name no cgroup parent; kubelet always names one) from
// every hierarchy once it holds nothing; rmdir fails harmlessly while it is
// in use. Under the systemd driver the default parent is a slice unit that
// systemd owns: berth leaves it to systemd.
func (s *Service) removeEmptyDefaultCgroup() {
	if s.cfg.SystemdCgroup {
		return
	}
	for _, root := range s.cgroupHierarchies() {
		_ = os.Remove(filepath.Join(root, oci.DefaultCgroupParent))
	}
}

// cgroupHierarchies are the places a cgroupfs path may exist: every mount
// under the cgroup root (v1 and hybrid) and the root itself (v2).
func (s *Service) cgroupHierarchies() []string {
	roots, _ := filepath.Glob(filepath.Join(s.cgroupRoot, "*"))
	return append(roots, s.cgroupRoot)
}

// runcDelete runs runc delete, with --force only when the plain delete
// fails (a container still running): on a stopped container runc 1.5's
// --force costs ~100 ms more than a plain delete (1.1's did not). Then it
// removes what runc left of the container's cgroup. runc retries its own
// rmdir for about 150 ms, then only logs the failure and still exits 0: a
// task still exiting on a loaded host leaves the directory behind in some
// hierarchies.
func (s *Service) runcDelete(ctx context.Context, rt containerRuntime, id, cgroupsPath string) error {
	if err := rt.Delete(ctx, id, false); err != nil && !isGone(err) {
		if err := rt.Delete(ctx, id, true); err != nil && !isGone(err) {
			return fmt.Errorf("runc delete %s: %w", id, err)
		}
	}
	s.removeLeftoverCgroup(ctx, id, cgroupsPath)
	return nil
}

// removeLeftoverCgroup removes the directories of a cgroupfs-driver
// cgroupsPath that are still there, retrying while one still holds an
// exiting task (rmdir only: a directory that keeps a live task or a child
// stays, and is reported). A systemd-driver scope is systemd's to remove.
func (s *Service) removeLeftoverCgroup(ctx context.Context, id, cgroupsPath string) {
	if cgroupsPath == "" || cgrouppath.IsSystemd(cgroupsPath) {
		return
	}
	rel, err := cgrouppath.Dir(cgroupsPath)
	if err != nil || rel == "/" {
		return
	}
	var left []string
	for _, root := range s.cgroupHierarchies() {
		if st, err := os.Lstat(filepath.Join(root, rel)); err == nil && st.IsDir() {
			left = append(left, filepath.Join(root, rel))
		}
	}
	deadline := time.Now().Add(s.cgroupRemoveWait)
	delay := 10 * time.Millisecond
	for left = rmdirEach(left); len(left) > 0 && time.Now().Before(deadline); left = rmdirEach(left) {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			deadline = time.Time{}
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
	if len(left) > 0 {
		s.log.Warn("cgroup left behind: it still holds a task or a child cgroup", "id", id, "dirs", left)
	}
}

// rmdirEach removes each directory and returns those still there.
func rmdirEach(dirs []string) []string {
	var left []string
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			left = append(left, d)
		}
	}
	return left
}

// bundleCgroupsPath is the cgroupsPath of the OCI spec in bundle, "" when
// it cannot be read.
func bundleCgroupsPath(bundle string) string {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return ""
	}
	var spec struct {
		Linux struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
	if json.Unmarshal(data, &spec) != nil {
		return ""
	}
	return spec.Linux.CgroupsPath
}
