package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// IDMap says how a container's rootfs (or an image volume) is seen from a
// pod's user namespace: the image's layers, owned by the host's ids as
// they were unpacked, are idmapped into UserNS (a pinned user namespace
// file) so that the pod's root sees them as its own; nothing is chowned
// but the empty upper dir's root, which is given to RootUID:RootGID (the
// host ids of the pod's root): overlayfs takes the rootfs root's owner
// from it.
//
// Scratch is a root-only directory of the caller's where the idmapped
// clones of the layers are attached while overlayfs takes them (kernels
// before 6.15 refuse detached mounts as lower dirs); they are detached
// again once the overlay is mounted, which keeps its own references.
// ReleaseIDMapScratch removes what a crash left there.
type IDMap struct {
	UserNS           string
	RootUID, RootGID uint32
	Scratch          string
}

// idmappedLayers are the idmapped clones of the lower layers, attached
// under the scratch directory.
type idmappedLayers struct {
	scratch string
	dirs    []string
}

// openLayers clones each layer directory (in overlay order) as a
// read-only mount idmapped into m.UserNS and attaches it under m.Scratch.
func (m *IDMap) openLayers(layers []string) (_ *idmappedLayers, retErr error) {
	if m.Scratch == "" || !filepath.IsAbs(m.Scratch) {
		return nil, fmt.Errorf("idmapped layers: scratch directory %q: not absolute", m.Scratch)
	}
	if err := ReleaseIDMapScratch(m.Scratch); err != nil {
		return nil, err
	}
	ns, err := os.Open(m.UserNS)
	if err != nil {
		return nil, fmt.Errorf("idmapped layers: user namespace: %w", err)
	}
	defer ns.Close()
	if err := os.MkdirAll(m.Scratch, 0o700); err != nil {
		return nil, fmt.Errorf("idmapped layers: %w", err)
	}
	out := &idmappedLayers{scratch: m.Scratch}
	defer func() {
		if retErr != nil {
			_ = out.close()
		}
	}()
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(ns.Fd())}
	for i, layer := range layers {
		dir := filepath.Join(m.Scratch, strconv.Itoa(i))
		if err := attachIDMapped(layer, dir, &attr); err != nil {
			return nil, err
		}
		out.dirs = append(out.dirs, dir)
	}
	return out, nil
}

// attachIDMapped clones layer, idmaps the clone (read-only) and attaches
// it at dir, which it creates.
func attachIDMapped(layer, dir string, attr *unix.MountAttr) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, layer, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("idmapped layer %s: open_tree: %w", layer, err)
	}
	defer unix.Close(fd)
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("idmapped layer %s: mount_setattr: %w", layer, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("idmapped layer %s: %w", layer, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		_ = os.Remove(dir)
		return fmt.Errorf("idmapped layer %s: move_mount: %w", layer, err)
	}
	return nil
}

func (l *idmappedLayers) paths() []string { return l.dirs }

// close detaches the clones and removes the scratch directory.
func (l *idmappedLayers) close() error { return ReleaseIDMapScratch(l.scratch) }

// ReleaseIDMapScratch detaches every idmapped layer attached under
// scratch and removes the directory. Only mount points and empty
// directories are removed: a layer that will not detach stays, with an
// error, and nothing under it is touched. A missing scratch is fine.
func ReleaseIDMapScratch(scratch string) error {
	entries, err := os.ReadDir(scratch)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("idmapped layers %s: %w", scratch, err)
	}
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(scratch, e.Name())
		if err := detachAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("idmapped layers: %w", err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(scratch); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("idmapped layers: %w", err)
	}
	return nil
}

// detachAll lazily unmounts every mount stacked on dir.
func detachAll(dir string) error {
	for i := 0; i < 16; i++ {
		err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("idmapped layer %s: unmount: %w", dir, err)
		}
	}
	return fmt.Errorf("idmapped layer %s: still mounted after 16 unmounts", dir)
}

// ownUpper gives the upper dir's root to the pod's root.
func (m *IDMap) ownUpper(upper string) error {
	if err := os.Lchown(upper, int(m.RootUID), int(m.RootGID)); err != nil {
		return fmt.Errorf("upper dir: %w", err)
	}
	return nil
}
