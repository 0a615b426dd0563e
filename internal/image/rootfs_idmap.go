package image

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// IDMap says how a container's rootfs is seen from a pod's user namespace:
// the image's layers, owned by the host's ids as they were unpacked, are
// idmapped into UserNS (a pinned user namespace file) so that the pod's
// root sees them as its own; nothing is chowned but the empty upper dir's
// root, which is given to RootUID:RootGID (the host ids of the pod's root):
// overlayfs takes the rootfs root's owner from it.
type IDMap struct {
	UserNS           string
	RootUID, RootGID uint32
}

// idmappedLayers are detached idmapped clones of the lower layers, held
// open as file descriptors: overlayfs takes them by /proc/self/fd path and
// keeps its own references, so closing them after the mount leaves no
// mount behind.
type idmappedLayers struct{ fds []int }

// openLayers clones each layer directory (in overlay order) as a
// read-only mount idmapped into m.UserNS.
func (m *IDMap) openLayers(layers []string) (_ *idmappedLayers, retErr error) {
	ns, err := os.Open(m.UserNS)
	if err != nil {
		return nil, fmt.Errorf("idmapped layers: user namespace: %w", err)
	}
	defer ns.Close()
	out := &idmappedLayers{}
	defer func() {
		if retErr != nil {
			out.close()
		}
	}()
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(ns.Fd())}
	for _, layer := range layers {
		fd, err := unix.OpenTree(unix.AT_FDCWD, layer, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("idmapped layer %s: open_tree: %w", layer, err)
		}
		out.fds = append(out.fds, fd)
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return nil, fmt.Errorf("idmapped layer %s: mount_setattr: %w", layer, err)
		}
	}
	return out, nil
}

func (l *idmappedLayers) paths() []string {
	out := make([]string, len(l.fds))
	for i, fd := range l.fds {
		out[i] = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	return out
}

func (l *idmappedLayers) close() {
	for _, fd := range l.fds {
		_ = unix.Close(fd)
	}
	l.fds = nil
}

// ownUpper gives the upper dir's root to the pod's root.
func (m *IDMap) ownUpper(upper string) error {
	if err := os.Lchown(upper, int(m.RootUID), int(m.RootGID)); err != nil {
		return fmt.Errorf("upper dir: %w", err)
	}
	return nil
}
