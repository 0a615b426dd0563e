package image

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// imageVolumeFlags are the flags of an image volume's overlay: nothing on
// it can be written, or gain privileges through set-id bits or device
// nodes. Its programs run (not noexec): KEP-4639 dropped noexec before GA,
// containerd and CRI-O do not set it, and critest checks that they run.
const imageVolumeFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV

// MountImageVolume mounts an image read-only at target for an image volume
// (CRI Mount.image): an overlay whose lower dirs are the image's unpacked
// layers (layerPaths, bottom first) with no upper dir, mounted read-only,
// nosuid and nodev. Overlayfs wants two lower dirs when it has no
// upper one, so emptyDir, an empty directory, lies beneath the layers.
// target and emptyDir are created when missing. With idmap set, the lower
// dirs are idmapped into a pod's user namespace, as a rootfs' are
// (rootfs_idmap.go): an overlay itself cannot be idmapped.
func MountImageVolume(layerPaths []string, emptyDir, target string, idmap *IDMap) (retErr error) {
	if len(layerPaths) == 0 {
		return fmt.Errorf("image volume %s: the image has no layers: %w", target, errdefs.ErrInvalidArgument)
	}
	lowers := slices.Clone(layerPaths)
	slices.Reverse(lowers)
	lowers = append(lowers, emptyDir)
	for _, p := range lowers {
		if !filepath.IsAbs(p) || strings.ContainsAny(p, ":,\n") {
			return fmt.Errorf("image volume %s: lower dir %q: not absolute, or contains ':' or ',': %w", target, p, errdefs.ErrInvalidArgument)
		}
	}
	data := "lowerdir=" + strings.Join(lowers, ":")
	if len(data) > maxMountData {
		return fmt.Errorf("image volume %s: overlay options: %d bytes over the %d byte limit (%d layers): %w",
			target, len(data), maxMountData, len(layerPaths), errdefs.ErrInvalidArgument)
	}
	for _, d := range []string{emptyDir, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("image volume %s: %w", target, err)
		}
	}
	if entries, err := os.ReadDir(emptyDir); err != nil || len(entries) > 0 {
		return fmt.Errorf("image volume %s: bottom dir %s: not empty (%v): %w", target, emptyDir, err, errdefs.ErrFailedPrecondition)
	}
	if idmap != nil {
		layers, err := idmap.openLayers(lowers)
		if err != nil {
			return fmt.Errorf("image volume %s: %w", target, err)
		}
		defer func() { retErr = errors.Join(retErr, layers.close()) }()
		data = "lowerdir=" + strings.Join(layers.paths(), ":")
	}
	if err := unix.Mount("overlay", target, "overlay", imageVolumeFlags, data); err != nil {
		return fmt.Errorf("image volume %s: mount overlay: %w", target, err)
	}
	return nil
}

// UnmountImageVolume unmounts an image volume at target, including mounts
// stacked on it. A target that is missing or not mounted is not an error.
func UnmountImageVolume(target string) error { return unmountOverlay("image volume", target) }

// CheckSubPath checks an image_sub_path on its own: relative, without
// ".." elements. "" (the whole image) is fine.
func CheckSubPath(sub string) error {
	switch {
	case path.IsAbs(sub):
		return fmt.Errorf("image sub path %q: not relative: %w", sub, errdefs.ErrInvalidArgument)
	case slices.Contains(strings.Split(sub, "/"), ".."):
		return fmt.Errorf("image sub path %q: contains '..': %w", sub, errdefs.ErrInvalidArgument)
	case strings.ContainsRune(sub, 0):
		return fmt.Errorf("image sub path %q: contains NUL: %w", sub, errdefs.ErrInvalidArgument)
	}
	return nil
}

// ResolveSubPath returns the path of sub beneath the mounted image at root.
// sub comes from a manifest: it is resolved by the kernel
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS), so neither ".." nor a
// symlink in the image (absolute, or climbing out) leads out of root; such
// a sub path is InvalidArgument, a missing one NotFound. The image is
// read-only, so the path stays what was resolved.
func ResolveSubPath(root, sub string) (string, error) {
	if err := CheckSubPath(sub); err != nil {
		return "", err
	}
	if path.Clean("/"+sub) == "/" {
		return root, nil
	}
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("image root %s: %w", root, err)
	}
	defer unix.Close(dirfd)
	realRoot, err := fdPath(dirfd)
	if err != nil {
		return "", fmt.Errorf("image root %s: %w", root, err)
	}
	fd, err := openBeneath(dirfd, sub)
	if err != nil {
		return "", subPathError(sub, err)
	}
	defer unix.Close(fd)
	resolved, err := fdPath(fd)
	if err != nil {
		return "", fmt.Errorf("image sub path %q: %w", sub, err)
	}
	if resolved != realRoot && !strings.HasPrefix(resolved, realRoot+"/") {
		return "", fmt.Errorf("image sub path %q: resolves to %s, outside the image: %w", sub, resolved, errdefs.ErrInvalidArgument)
	}
	return resolved, nil
}

// openBeneath opens sub beneath dirfd as an O_PATH descriptor, retrying
// when the kernel asks to (EAGAIN: a rename raced the lookup).
func openBeneath(dirfd int, sub string) (int, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 8 {
		fd, err := unix.Openat2(dirfd, sub, how)
		if !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

func subPathError(sub string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("image sub path %q: does not exist in the image: %w", sub, errdefs.ErrNotFound)
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("image sub path %q: leads out of the image (a symlink or '..'): %w", sub, errdefs.ErrInvalidArgument)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("image sub path %q: resolving it needs openat2 (Linux 5.6 or later): %w", sub, errdefs.ErrFailedPrecondition)
	}
	return fmt.Errorf("image sub path %q: %w", sub, err)
}

// fdPath is the path the kernel knows for an open descriptor.
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("descriptor path %q: not absolute: %w", p, errdefs.ErrFailedPrecondition)
	}
	return p, nil
}
