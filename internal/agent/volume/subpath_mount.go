package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// SubPathsDir holds a pod's subPath bind mounts:
// <pod>/volume-subpaths/<volume>/<container>/<mount index>, as the kubelet
// lays them out.
const SubPathsDir = "volume-subpaths"

// SubPathMountPoint is where MountSubPath mounts a container's volumeMount
// number index.
func (m *Manager) SubPathMountPoint(uid, volume, container string, index int) string {
	return filepath.Join(m.PodDir(uid), SubPathsDir, volume, container, strconv.Itoa(index))
}

// MountSubPath is the agent's podspec.ContainerOptions.ResolveSubPath. It
// opens the subPath beneath the volume on descriptors (openSubPath), then
// bind-mounts what it opened, through /proc/self/fd, on the mount's private
// mount point (SubPathMountPoint) and returns that point: the runtime
// mounts it into the container by name, and nothing a container does in the
// volume can change what it leads to. A mount already there, from an
// earlier instance of the container, is replaced. Teardown unmounts them
// with the rest of the pod's mounts.
func (m *Manager) MountSubPath(req podspec.SubPathMount) (string, error) {
	if err := checkSubPathNames(req); err != nil {
		return "", err
	}
	target, name, err := openSubPath(req.VolumePath, req.SubPath)
	if err != nil {
		return "", err
	}
	defer target.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(target.Fd()), &st); err != nil {
		return "", fmt.Errorf("subPath %q: stat %s: %w", req.SubPath, name, err)
	}
	point := m.SubPathMountPoint(req.PodUID, req.Volume, req.Container, req.MountIndex)
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if err := makeMountPoint(point, isDir); err != nil {
		return "", fmt.Errorf("subPath %q: mount point: %w", req.SubPath, err)
	}
	source := "/proc/self/fd/" + strconv.Itoa(int(target.Fd()))
	if err := unix.Mount(source, point, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("subPath %q: bind-mount %s on %s: %w", req.SubPath, name, point, err)
	}
	return point, nil
}

// checkSubPathNames refuses names that could not be one path component
// each (the manifest's validation already holds them to DNS labels).
func checkSubPathNames(req podspec.SubPathMount) error {
	if err := checkUID(req.PodUID); err != nil {
		return err
	}
	for _, n := range []struct{ what, name string }{{"volume", req.Volume}, {"container", req.Container}} {
		if n.name == "" || n.name == "." || n.name == ".." || strings.ContainsAny(n.name, "/\x00") {
			return fmt.Errorf("subPath %q: %s name %q: empty or not usable in a path", req.SubPath, n.what, n.name)
		}
	}
	if req.MountIndex < 0 {
		return fmt.Errorf("subPath %q: negative mount index %d", req.SubPath, req.MountIndex)
	}
	return nil
}

// makeMountPoint makes point an empty directory (isDir) or an empty file,
// first unmounting whatever an earlier MountSubPath left there. Anything
// else in its place is refused, never removed.
func makeMountPoint(point string, isDir bool) error {
	if err := os.MkdirAll(filepath.Dir(point), 0o750); err != nil {
		return err
	}
	if err := unmountAt(point); err != nil {
		return err
	}
	info, err := os.Lstat(point)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case info.IsDir() == isDir && (isDir || info.Mode().IsRegular()):
		return nil
	default:
		// A point of the other kind, from an earlier subPath that was a
		// file where this one is a directory or the reverse: os.Remove
		// takes only an empty directory or a file.
		if err := os.Remove(point); err != nil {
			return err
		}
	}
	if isDir {
		return os.Mkdir(point, 0o750)
	}
	f, err := os.OpenFile(point, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// unmountAt unmounts everything mounted at or below point, stacked mounts
// included; nothing mounted is fine.
func unmountAt(point string) error {
	if _, err := os.Lstat(point); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	const maxRounds = 8
	for round := 0; round < maxRounds; round++ {
		if info, err := os.Lstat(point); err == nil && info.IsDir() {
			if err := unmountAllUnder(point); err != nil {
				return err
			}
		}
		mounted, err := isMountPoint(point)
		if err != nil || !mounted {
			return err
		}
		if err := unmount(point); err != nil {
			return err
		}
	}
	return fmt.Errorf("mounts still on %s", point)
}
