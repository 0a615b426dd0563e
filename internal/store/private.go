package store

import (
	"fmt"
	"os"
)

// PrivateDirMode is the mode of every directory berth keeps its records,
// bundles, mounts, sockets and pod files in: only root may enter. A host
// user who could reach a container's rootfs could run its setuid binaries
// or open device nodes planted in it.
const PrivateDirMode os.FileMode = 0o700

// MkdirPrivate creates dir and its missing parents with PrivateDirMode and
// takes group and other permissions away from dir if it already exists
// (an older berth made some of these directories 0711). A symlink at dir is
// followed (an admin may move /var/lib/berth elsewhere); anything but a
// directory is refused.
func MkdirPrivate(dir string) error {
	return mkdirWithMode(dir, PrivateDirMode, func(perm os.FileMode) os.FileMode { return perm &^ 0o077 })
}

// mkdirWithMode creates dir and its missing parents with mode, then gives
// an existing dir the mode want returns for its current one.
func mkdirWithMode(dir string, mode os.FileMode, want func(os.FileMode) os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("directory %s: not a directory (%v)", dir, info.Mode().Type())
	}
	perm := want(info.Mode().Perm())
	if perm == info.Mode().Perm() {
		return nil
	}
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("directory %s: mode %o: %w", dir, perm, err)
	}
	return nil
}

// TraversableDirMode is the mode of berth's state directory and of its
// userns directory: root-only but for traversal (x for group and others),
// so that a pod's root in a user namespace, an unprivileged id on the
// host, can reach its containers' root filesystems under <state>/userns (each pod's directory there is
// root:<the pod's root gid> 0710). Every other entry of the state
// directory is root-only, its sockets 0660.
const TraversableDirMode os.FileMode = 0o711

// MkdirTraversable creates dir (and missing parents) with
// TraversableDirMode, and sets that mode when it exists with another.
func MkdirTraversable(dir string) error {
	return mkdirWithMode(dir, TraversableDirMode, func(os.FileMode) os.FileMode { return TraversableDirMode })
}
