package podcgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/cgrouppath"
)

// Remove removes the pod's cgroup once its sandbox is gone, as kubelet
// does: under the systemd driver it stops the pod's slice (stopPodSlice),
// else it removes the pod-level directories (removePodDirs). Each QoS
// class's place is tried: a pod recovered without its containers may
// read as another class than the one it was made in. A cgroup that still
// holds something stays.
func (m *Manager) Remove(ctx context.Context, pod *v1.Pod) error {
	if !podspec.ValidUID(pod.UID) {
		return fmt.Errorf("pod cgroup: uid %q: not a path component", pod.UID)
	}
	var errs []error
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if !m.Systemd {
			removePodDirs(podspec.PodCgroupParentFor("", pod.UID, qos))
			continue
		}
		errs = append(errs, stopPodSlice(ctx, podspec.PodSliceFor(pod.UID, qos)))
	}
	return errors.Join(errs...)
}

// removePodDirs removes the pod-level cgroup directories under the pod's
// cgroupfs parent (runc removes only the containers' own).
// Only empty directories go (rmdir); cgroup v1 has one per controller
// hierarchy.
func removePodDirs(parent string) {
	if parent == "" || !filepath.IsAbs(parent) {
		return
	}
	os.Remove(filepath.Join("/sys/fs/cgroup", parent)) // v2; absent or busy is fine
	hierarchies, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range hierarchies {
		if h.IsDir() {
			os.Remove(filepath.Join("/sys/fs/cgroup", h.Name(), parent)) // v1; as above
		}
	}
}

// systemdTrees are where systemd keeps its own view of the cgroup tree:
// cgroup v2, the hybrid layout's unified mount, the legacy name=systemd one.
var systemdTrees = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"}

// stopPodSlice stops the pod's systemd slice once nothing is left in it,
// as the kubelet stops pod slices: systemd keeps a slice it made for a
// scope active, and its cgroup, until told otherwise. A slice that still
// holds a unit or a process is left as it is (stopping it would stop them).
func stopPodSlice(ctx context.Context, slice string) error {
	dir, err := cgrouppath.ExpandSlice(slice)
	if err != nil || dir == "/" {
		return fmt.Errorf("pod slice %q: %w", slice, err)
	}
	found := false
	for _, tree := range systemdTrees {
		if _, err := os.Stat(filepath.Join(tree, dir)); err == nil {
			found = true
		}
		if busy, err := cgroupInUse(filepath.Join(tree, dir)); err != nil || busy {
			return err // in use (nil) or unreadable: left alone
		}
	}
	if !found {
		return nil // no cgroup: systemd holds no active slice of that name
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := sddbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		return fmt.Errorf("pod slice %s: systemd: %w", slice, err)
	}
	defer conn.Close()
	done := make(chan string, 1)
	if _, err := conn.StopUnitContext(ctx, slice, "replace", done); err != nil {
		var dbusErr godbus.Error
		if errors.As(err, &dbusErr) && strings.HasSuffix(dbusErr.Name, ".NoSuchUnit") {
			return nil
		}
		return fmt.Errorf("pod slice %s: stop: %w", slice, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("pod slice %s: stop: %s", slice, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pod slice %s: stop: %w", slice, ctx.Err())
	}
}

// cgroupInUse reports whether the cgroup directory dir holds a process or
// a child cgroup; a missing directory is not in use.
func cgroupInUse(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			return true, nil
		}
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return len(strings.TrimSpace(string(procs))) > 0, nil
}
