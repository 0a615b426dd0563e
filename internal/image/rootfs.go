package image

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// maxMountData is the kernel's limit for mount options: one page.
var maxMountData = os.Getpagesize() - 1

// MountRootfs mounts an overlay at target with layerPaths (bottom first)
// as lower dirs and upperDir/workDir as the writable layer, creating
// upperDir, workDir and target when missing. With idmap set, the lower
// layers are idmapped into the pod's user namespace (rootfs_idmap.go).
func MountRootfs(layerPaths []string, upperDir, workDir, target string, idmap *IDMap) (retErr error) {
	if len(layerPaths) == 0 {
		return fmt.Errorf("rootfs %s: no layers: %w", target, errdefs.ErrInvalidArgument)
	}
	for _, p := range slices.Concat(layerPaths, []string{upperDir, workDir}) {
		if p == "" || strings.ContainsAny(p, ":,\n") {
			return fmt.Errorf("rootfs %s: overlay dir %q: empty or contains ':' or ',': %w", target, p, errdefs.ErrInvalidArgument)
		}
	}
	lowers := make([]string, 0, len(layerPaths))
	for i := len(layerPaths) - 1; i >= 0; i-- {
		lowers = append(lowers, layerPaths[i])
	}
	if idmap != nil {
		layers, err := idmap.openLayers(lowers)
		if err != nil {
			return fmt.Errorf("rootfs %s: %w", target, err)
		}
		defer func() { retErr = errors.Join(retErr, layers.close()) }()
		lowers = layers.paths()
	}
	data := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + upperDir + ",workdir=" + workDir
	if len(data) > maxMountData {
		return fmt.Errorf("rootfs %s: overlay options: %d bytes over the %d byte limit (%d layers): %w",
			target, len(data), maxMountData, len(layerPaths), errdefs.ErrInvalidArgument)
	}
	for _, d := range []string{upperDir, workDir, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("rootfs %s: %w", target, err)
		}
	}
	if idmap != nil {
		if err := idmap.ownUpper(upperDir); err != nil {
			return fmt.Errorf("rootfs %s: %w", target, err)
		}
	}
	if err := unix.Mount("overlay", target, "overlay", 0, data); err != nil {
		return fmt.Errorf("rootfs %s: mount overlay: %w", target, err)
	}
	return nil
}

// UnmountRootfs unmounts target, including mounts stacked on it. A target
// that is missing or not mounted is not an error.
func UnmountRootfs(target string) error { return unmountOverlay("rootfs", target) }

// unmountOverlay unmounts target (what names it in errors), including
// mounts stacked on it, lazily when it is busy. A target that is missing
// or not mounted is not an error.
func unmountOverlay(what, target string) error {
	for range 16 {
		err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY):
			if err := unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
				return fmt.Errorf("%s %s: unmount: %w", what, target, err)
			}
		default:
			return fmt.Errorf("%s %s: unmount: %w", what, target, err)
		}
	}
	return fmt.Errorf("%s %s: unmount: still mounted after 16 unmounts: %w", what, target, errdefs.ErrFailedPrecondition)
}
